"""The controller's own mail (a job's BEGIN, an array's end, jobd's mailfinished), sent in the
background; what became of each is kept as an event of its job."""

from __future__ import annotations

import asyncio

from drover.controller.effects import JobEnded, SendMail
from drover.controller.handlers import queues
from drover.controller.settings import Settings
from drover.controller.shell.transaction import Shell
from drover.store.base import Changes


class Mailer:
    def __init__(self, shell: Shell, settings: Settings) -> None:
        self.shell = shell
        self.settings = settings

    def send(self, message: SendMail) -> None:
        asyncio.get_running_loop().create_task(self._mail(message))

    def mail_if_queue_finished(self, ended: JobEnded) -> bool:
        """jobd's mailfinished ("mail should be sent when last job in queue finishes
        computation"): a queue with `mail_finished` that holds no job once `ended` has ended
        (its changes are committed) is mailed about, to its owner, else to the job's --mail-user,
        else to the job's owner. Only such queues pay for the look at the working set."""
        queue = queues.queues_in_effect(self.shell.state, self.settings.queues).get(ended.queue)
        if queue is None or not queue.mail_finished:
            return False
        if any(job.spec.queue == ended.queue for job in self.shell.state.jobs.values()):
            return False
        to = queue.owner or ended.mail_user or ended.owner
        subject = f"Drover queue {ended.queue}: its last job finished"
        body = (f"The last job of queue {ended.queue}, {ended.job_id} ({ended.name}) of {ended.owner}, "
                f"ended {ended.state}.\nThe queue holds no more jobs.\n")
        self.send(SendMail(ended.job_id, to, subject, body))
        return True

    async def _mail(self, message: SendMail) -> None:
        """Send in a thread, retrying with back-off; the outcome becomes an event. At most
        once: a controller that dies before sending does not send it later."""
        from drover import mail

        error: Exception | None = None
        for attempt in range(self.settings.mail_tries):
            try:
                await asyncio.to_thread(mail.send, self.settings.smtp_host, self.settings.smtp_port,
                                        message.to, message.subject, message.body)
            except Exception as failure:
                error = failure
                await asyncio.sleep(min(0.5 * 2**attempt, 30))
            else:
                error = None
                break
        changes = Changes()
        if error is None:
            changes.event(self.shell.clock(), "mail_sent", message.job_id, to=message.to, subject=message.subject)
        else:
            changes.event(self.shell.clock(), "mail_failed", message.job_id, to=message.to, error=str(error))
        self.shell.record(changes)

