"""Runs the bot hosts: starting them, storing and posting each stop's interrupts with their
approvers, resume workers, and catching up a run an earlier attempt left half done."""
