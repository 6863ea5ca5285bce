"""The participants' pages (server-rendered); nothing imports it."""
