"""What happens with time: expiry and escalation, reminders in each approver's working
hours, the outbox of unposted cards, and the periodic check of user group members."""
