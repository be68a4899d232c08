"""The simulated node, the twin of the real backends: its GPUs and NVML, host and NICs (node), built
from its scenario (scenario), how its GPUs behave under load (physics), its compute (compute), its
performance and power models (models, slots), its host platform, BMC and host stress (platform), and
the faults it plants (faults). Only tests, --simulate and replay use it."""
