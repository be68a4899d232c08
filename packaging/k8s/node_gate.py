#!/usr/bin/env python3
"""After the qualification in the Kubernetes Job: on pass, remove the node's startup taint; on fail
(or when nodeqc could not run), leave the taint and label the node. Uses the pod's service account
and the standard library only, so it runs in the nodeqc image as it is.

    node_gate.py NODE EXIT_CODE [REPORT]

Label nodeqc.dev/qualification=passed|failed|error; annotation nodeqc.dev/report=REPORT (the path
on the node). On pass, when the report carries valid_until (the profile's valid_days), the label
nodeqc.dev/valid-until=YYYY-MM-DD says when the qualification expires (select expiring nodes with
a label selector; the exact time is in the nodeqc.dev/valid-until annotation). Taint key: $NODEQC_TAINT (default nodeqc.dev/unqualified). Exit 0 when the node was
updated, 1 when the API refused.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

SA = "/var/run/secrets/kubernetes.io/serviceaccount"
LABEL = "nodeqc.dev/qualification"
ANNOTATION = "nodeqc.dev/report"
VALID_UNTIL = "nodeqc.dev/valid-until"


def valid_until(report: str) -> str | None:
    """The report's valid_until (its signed predicate, read without verifying: the gate labels what
    nodeqc just wrote on this node), or None."""
    import base64

    try:
        with open(report, encoding="utf-8") as f:
            envelope = json.load(f)
        predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    stamp = predicate.get("valid_until")
    return stamp if isinstance(stamp, str) and len(stamp) >= 10 else None


def api_base() -> str:
    override = os.environ.get("NODEQC_K8S_API")  # tests, or kubectl proxy
    if override:
        return override.rstrip("/")
    return f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"


def call(method: str, path: str, body: dict | None = None) -> dict:
    token = open(os.environ.get("NODEQC_K8S_TOKEN_FILE", f"{SA}/token")).read().strip()
    request = urllib.request.Request(api_base() + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"Bearer {token}", "Accept": "application/json",
                                              "Content-Type": "application/merge-patch+json"})
    ctx = ssl.create_default_context(cafile=f"{SA}/ca.crt") if request.full_url.startswith("https") else None
    with urllib.request.urlopen(request, context=ctx, timeout=30) as response:
        return json.load(response)


def gate(node: str, exit_code: int, report: str) -> None:
    taint = os.environ.get("NODEQC_TAINT", "nodeqc.dev/unqualified")
    result = {0: "passed", 1: "failed"}.get(exit_code, "error")
    path = f"/api/v1/nodes/{node}"
    for attempt in range(5):
        current = call("GET", path)
        patch: dict = {"metadata": {"labels": {LABEL: result}, "annotations": {ANNOTATION: report or None}}}
        until = valid_until(report) if report and result == "passed" else None
        # A label value allows [A-Za-z0-9._-]: the date; the annotation keeps the time. None removes both.
        patch["metadata"]["labels"][VALID_UNTIL] = until[:10] if until else None
        patch["metadata"]["annotations"][VALID_UNTIL] = until
        if result == "passed":
            taints = current.get("spec", {}).get("taints") or []
            # A merge patch replaces the whole list: the resourceVersion makes it fail (409) rather
            # than drop a taint someone else added meanwhile; then read again and retry.
            patch["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            patch["spec"] = {"taints": [t for t in taints if t.get("key") != taint]}
        try:
            call("PATCH", path, patch)
            return
        except urllib.error.HTTPError as e:
            if e.code != 409 or attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or not argv[1].lstrip("-").isdigit():
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    node, exit_code, report = argv[0], int(argv[1]), argv[2] if len(argv) > 2 else ""
    try:
        gate(node, exit_code, report)
    except (OSError, KeyError, ValueError) as e:
        print(f"node_gate: {node}: cannot update the node: {e}", file=sys.stderr)
        return 1
    result = {0: "passed", 1: "failed"}.get(exit_code, "error")
    done = "startup taint removed" if exit_code == 0 else "taint left in place"
    print(f"node_gate: {node}: {LABEL}={result}; {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
