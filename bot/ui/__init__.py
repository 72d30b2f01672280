"""What people see in Slack: the interrupt card before and after a decision, modals, the
pending list, refusals; Block Kit builders and mrkdwn escaping; posting and updating cards."""
