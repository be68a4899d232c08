"""What a run produces and how it reads: the answer (findings with their advice), the signed
envelope, signing keys, the journal, text rendering, the printable PDF, the comparison of two
reports and the Prometheus textfile."""
