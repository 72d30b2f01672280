"""Signoff's Slack bot: posts interrupts, takes decisions, resumes runs."""
