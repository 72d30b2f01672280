"""How a click or a modal becomes a decision: Slack payloads checked at the trust boundary,
the click stream and its deciders, modal submissions, and group members looked up again."""
