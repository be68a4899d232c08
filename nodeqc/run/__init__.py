"""One qualification run: the runner that orchestrates the steps, the event stream it speaks, and
the flow around it that the faces share (hardware and profile from arguments, what follows the
report)."""
