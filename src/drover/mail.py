"""Mail about jobs (jobd's mail options, Slurm's --mail-type, Grid Engine's -m bea): plain text
over SMTP to a relay (default localhost:25). Standard library only."""

from __future__ import annotations

import smtplib
import socket
from email.message import EmailMessage

MAIL_TYPES = ("BEGIN", "END", "FAIL", "REQUEUE", "ALL", "ARRAY_TASKS", "NONE")


def parse_mail_types(text: str) -> list[str]:
    """"END,FAIL" → ["END", "FAIL"]; ALL means BEGIN, END, FAIL and REQUEUE."""
    from drover.core.errors import BadRequest

    types = [word.strip().upper() for word in text.split(",") if word.strip()]
    unknown = [word for word in types if word not in MAIL_TYPES]
    if unknown or not types:
        raise BadRequest(f"--mail-type: unknown {', '.join(unknown) or 'empty value'}; known: {', '.join(MAIL_TYPES)}")
    if "NONE" in types:
        return []
    if "ALL" in types:
        types = sorted(set(types) - {"ALL"} | {"BEGIN", "END", "FAIL", "REQUEUE"})
    return types


def wants(mail_types: list[str], event: str, is_array_task: bool) -> bool:
    """Whether `event` (BEGIN, END, FAIL, REQUEUE) of one task is mailed. Tasks of an array are
    mailed one by one only with ARRAY_TASKS; otherwise the array gets one mail when it ends."""
    if is_array_task and "ARRAY_TASKS" not in mail_types:
        return False
    if event == "FAIL":
        return "FAIL" in mail_types or "END" in mail_types
    return event in mail_types


def send(host: str, port: int, to: str, subject: str, body: str, timeout_s: float = 10.0) -> None:
    """Send one mail; raises OSError or smtplib.SMTPException on failure."""
    message = EmailMessage()
    message["From"] = f"drover@{socket.gethostname()}"
    message["To"] = to
    message["Subject"] = subject
    message.set_content(body)
    with smtplib.SMTP(host, port, timeout=timeout_s) as client:
        client.send_message(message)


def summary(job_id: int, index: int | None, name: str, what: str, details: dict[str, object]) -> tuple[str, str]:
    """Subject and body of a job's mail."""
    label = f"{job_id}.{index}" if index is not None else str(job_id)
    subject = f"Drover job {label} ({name}) {what}"
    lines = [f"Job {label} ({name}) {what}.", ""]
    lines += [f"{key:<14} {value}" for key, value in details.items() if value is not None]
    return subject, "\n".join(lines) + "\n"
