"""Read a job event log with HTCondor's own Python bindings (`htcondor.JobEventLog`), as tools
that watch HTCondor jobs do: follow it while it grows, one event at a time, until ENDS jobs have
ended (terminated or aborted). Prints each event as `EVENT {json}` as it is read, then `DONE`.

Run with the tool's Python: driver LOG ENDS TIMEOUT_S"""

import json
import sys
import time

import htcondor

ENDING = (htcondor.JobEventType.JOB_TERMINATED, htcondor.JobEventType.JOB_ABORTED)


def main(path, ends, timeout):
    deadline = time.monotonic() + timeout
    ended = 0
    log = htcondor.JobEventLog(path)
    while ended < ends and time.monotonic() < deadline:
        for event in log.events(stop_after=1):
            fields = {key: value for key, value in dict(event).items()
                      if key in ("ReturnValue", "TerminatedNormally", "TerminatedBySignal", "HoldReason",
                                 "HoldReasonCode", "Reason", "ExecuteHost", "SubmitHost", "Size", "Message",
                                 "RequestMemory", "RequestCpus", "MemoryUsage", "ResidentSetSize")}
            if event.type == htcondor.JobEventType.FILE_TRANSFER:
                fields["Type"] = event["Type"]
            print("EVENT " + json.dumps({"type": event.type.name, "cluster": event.cluster, "proc": event.proc,
                                         **fields}), flush=True)
            if event.type in ENDING:
                ended += 1
    print("DONE" if ended >= ends else f"TIMEOUT after {ended} ends", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
