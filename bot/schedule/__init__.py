"""What happens with time: expiry and escalation, reminders in each approver's working
hours, the outbox of unposted cards, and the periodic checks of user group members and of
pending requests whose record Redis lost."""
