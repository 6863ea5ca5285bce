"""The crowd platform's lifecycle of a study: publishing it, its submissions, decisions
about pay and bonuses in a ledger (a Django app of its own, label ``crowd``)."""
