"""What a node is held to and what a run does: the profile (thresholds and run settings), the
calibration rule that makes floors from a SKU's healthy figures, --only/--skip selection, NIC
traffic peers, and the node's baseline (what its hardware and configuration must be)."""
