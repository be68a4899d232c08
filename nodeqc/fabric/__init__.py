"""Fabric acceptance: many nodes qualified together by rounds of random pairs.

- `pairing`: seeded rounds in which every node meets a new peer, and how many rounds a stated
  confidence needs.
- `scoring`: from the per-pair, per-rail results to the bad node, the bad rail (on one node or
  fabric-wide) or the bad link between two good nodes.
- `simulated`: a simulated cluster with faults per node, rail and link (`nodeN:...`).
- `worker`: the per-node work of one pair (iperf3, ib_write_bw per rail both ways, NCCL).
- `launchers`: how that work reaches the nodes: Slurm's `srun` (one step per pair, inside the job's
  allocation), a command prefix per host (`ip netns exec NS`, pdsh, ...), or the simulated cluster.
- `report`: the signed fabric report (an in-toto Statement with every node as a subject).
- `kubernetes`: the Kubernetes launcher (one Indexed Job per round, through kubectl).
- `cli`: `nodeqc fabric` and `nodeqc fabric worker`.
"""
