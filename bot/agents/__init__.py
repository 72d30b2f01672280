"""The agents the bot may run and who approves what: ``AgentSpec`` and ``Policy``, declared
in the module ``SIGNOFF_AGENTS`` names, and the registry that builds them."""
