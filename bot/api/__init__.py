"""The HTTP APIs for jobs outside Slack, served beside the operator endpoints: the runs API."""
