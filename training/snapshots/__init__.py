"""Labels frozen into snapshots; steered and balanced data drawn from them."""
