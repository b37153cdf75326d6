"""Node liveness: a node's channel attached, what it says heard and handed on (its reports to the
grouped commit, controller/shell/report_group.py; answers to users' reads, samples and event log appends to their
keepers), a node silent for three heartbeats or gone, and a node that leaves the cluster."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from drover.controller.effects import Outcome
from drover.controller.handlers import reported_text
from drover.controller.handlers.attempt_nodes import ran_on, sent_to
from drover.controller.handlers.dispatch import OrderOptions
from drover.controller.handlers.node_reports import (
    Report,
    on_node_connected,
    on_node_disconnected,
    on_nodes_lost,
)
from drover.controller.nodes import staged_files
from drover.controller.nodes.node_channels import NodeChannel
from drover.controller.nodes.relays import Relays
from drover.controller.nodes.samples import LiveSamples
from drover.controller.settings import Settings
from drover.controller.shell.report_group import ReportGroup
from drover.controller.shell.transaction import Scope, Shell
from drover.core.errors import Conflict, DroverError, NotFound
from drover.core.ids import bounded_attempt_key
from drover.protocol.node_channel import (
    ChunkKept,
    Heartbeat,
    Hello,
    NodeMessage,
    PeTaskExited,
    Progress,
    StagedChunk,
    StagedOut,
)
from drover.store.faults import StoreFault

log = logging.getLogger("drover.controller")


class NodeLiveness:
    """What the nodes' channels bring, and which nodes are there."""

    def __init__(self, shell: Shell, group: ReportGroup, orders: OrderOptions, settings: Settings) -> None:
        self.shell = shell
        self.group = group
        self.orders = orders
        self.settings = settings
        self.relays = Relays(shell.channels)  # users' reads of output and terminals on nodes
        # What running attempts use now (`drover top`); in memory only. Each node's of its own.
        self.samples = LiveSamples(lambda name: sent_to(shell.state, name))  # the state of now, after a reload too

    def node_connected(self, channel: NodeChannel, hello: Hello) -> NodeChannel | None:
        """A failure here (the store refuses the hello) is raised: the channel closes, and the
        node connects and says hello again."""
        self.group.settle()  # what the node said on its previous channel comes first
        hello = reported_text.cleaned(hello)  # its features and devices are shown to everyone
        previous = self.shell.channels.attach(channel)
        shell = self.shell
        shell.run(lambda: on_node_connected(shell.state, hello, shell.clock(), self.orders, shell.store,
                                            self.settings.heartbeat_s),
                  Scope(nodes=frozenset({hello.node}), per_job=True))
        self.shell.event_logs.node_connected(hello.node, self.shell.store)  # the event logs it writes catch up
        # The orders for its tasks it missed while away, and the stops of tasks of ended attempts;
        # the ends of the tasks sent there that it does not know, recorded as any task's end.
        for lost in self.shell.pe_tasks.node_connected(self.shell.state, hello.node, hello.pe_task_attempts,
                                                       hello.pe_tasks):
            log.warning("node %s does not know task %s of attempt %s: it ends, failed", hello.node, lost.petask,
                        lost.attempt)
            if not self._pe_task_ended(hello.node, lost):
                self.shell.pe_tasks.still_running(lost, hello.node)
        return previous

    def node_messages(self, node: str, messages: list[NodeMessage]) -> None:
        """A frame of reports from a node: handled at the end of this loop turn (or held a moment
        if nothing waits on it), with the other nodes' frames and the pass they ask for
        (`_handle_group`); anything else the node says is taken now. Nothing here closes the
        node's channel: a job whose reports cannot be handled is failed alone (`_fail`), and
        while the store refuses the frame, nothing of it is acknowledged. The node sends its
        final reports (exited) and files (staged_out) again until they are; what it says once
        (started, suspended, exiting, progress) is kept here and tried again (`_keep_unsaved`)."""
        # Its text cleaned where it is shown to someone (handlers/reported_text.py); the reports
        # are cleaned where they are handled (on_reports), each once.
        messages = [message if isinstance(message, Report) else reported_text.cleaned(message) for message in messages]
        self._heard(node, messages)
        self.relays.take(node, messages)  # answers to users' reads and their terminals
        for message in messages:
            if isinstance(message, PeTaskExited):  # the end of a parallel job's task
                self._pe_task_ended(node, message)
            elif isinstance(message, StagedChunk):  # answered at once: the node sends the next
                self.shell.channels.send(node, self._chunk_kept(node, message))
            elif isinstance(message, Progress) and message.given_up and message.step == "stage_out":
                self._forget_partial(node, message.attempt)
        self.shell.event_logs.take(node, messages)  # answers to event log appends
        self.samples.take(node, messages)  # what its running attempts use, and which of them ended
        self.group.add(node, [m for m in messages if isinstance(m, Report) and self._kept(node, m)])

    def _heard(self, name: str, messages: list[NodeMessage]) -> None:
        """The node spoke: when, and from its last heartbeat how busy its host is. In memory only
        (a heartbeat costs no commit); `drover nodes` shows it."""
        node = self.shell.state.nodes.get(name)
        if node is None:
            return
        node.heard_at = self.shell.clock()
        for message in messages:
            if isinstance(message, Heartbeat):
                node.load, node.memory_free_mib = message.load, message.memory_free_mib

    def silent_nodes(self, now: float) -> list[str]:
        """Connected nodes not heard for three heartbeats: a link cut without a word (no FIN, no
        RST) looks connected to TCP for minutes."""
        limit = 3 * self.settings.heartbeat_s
        return [name for name in self.shell.channels.connected()
                if (node := self.shell.state.nodes.get(name)) is not None and node.heard_at is not None
                and now - node.heard_at > limit]

    def node_disconnected(self, channel: NodeChannel) -> None:
        self.group.settle()  # what it said before it went is handled (and acknowledged) first
        if not self.shell.channels.detach(channel):
            return
        self.relays.node_gone(channel.node)
        self.samples.node_gone(channel.node)
        self.shell.event_logs.node_gone(channel.node)
        self.group.node_gone(channel.node)
        try:
            # A node whose channel is gone is DOWN whatever the store holds: if the store
            # refuses that, the working set keeps it (nodes=nothing to put back); a restarted
            # controller starts every node DOWN.
            self.shell.run(lambda: on_node_disconnected(self.shell.state, channel.node, self.shell.clock()),
                           Scope(nodes=frozenset()))
        except Exception:
            pass  # logged

    def forget_node(self, name: str, forget_in_store: Callable[[], None]) -> None:
        """A node that left the cluster: refused while it runs attempts. `forget_in_store`
        removes it from the store (and revokes its certificates) before the working set forgets
        it and its channel is closed."""
        self.group.settle()
        node = self.shell.state.nodes.get(name)
        if node is None:
            raise NotFound(f"no node named {name} (`drover nodes` lists them)")
        if node.running:
            raise Conflict(f"node {name} still runs {node.running} attempt(s); cancel them or wait for them "
                           "to end before it leaves")
        forget_in_store()
        channel = self.shell.channels.channel(name)
        if channel is not None:
            self.shell.channels.detach(channel)
            asyncio.get_running_loop().create_task(channel.close())

        def handler() -> Outcome:
            outcome = Outcome()
            del self.shell.state.nodes[name]
            outcome.changes.event(self.shell.clock(), "node_left", node=name)
            return outcome

        self.shell.run(handler, Scope(nodes=frozenset({name})))

    async def watch_nodes(self) -> None:
        """Every few seconds: a connected node silent for three heartbeats is disconnected (so it
        is DOWN), and nodes down for longer than node_timeout_s lose their jobs."""
        shell = self.shell
        while True:
            await asyncio.sleep(min(max(self.settings.node_timeout_s / 4, 0.2), self.settings.heartbeat_s, 30))
            for name in self.silent_nodes(self.shell.clock()):
                channel = self.shell.channels.channel(name)
                if channel is None:
                    continue
                log.warning("node %s: silent for more than %.0fs (3 heartbeats); its channel is closed",
                            name, 3 * self.settings.heartbeat_s)
                self.node_disconnected(channel)
                await channel.close()
            try:
                shell.run(lambda: on_nodes_lost(shell.state, shell.clock(), self.settings.node_timeout_s,
                                                self.settings.exits),
                          Scope(per_job=True))
            except StoreFault as fault:
                log.warning("checking for lost nodes: %s", fault)
            except Exception:
                log.exception("checking for lost nodes failed")

    def _pe_task_ended(self, node: str, message: PeTaskExited) -> bool:
        """A task's end, recorded with its attempt (pe_tasks.PeTasks.ended); an ended job's
        attempt is no longer in the working set, and is read from the store. A commit refused
        is not acknowledged: the node sends the report again when it reconnects. False: it was
        refused."""
        key = bounded_attempt_key(message.attempt)
        if key is None:
            return True  # no attempt Drover could have made: a job number of 20 digits overflowed the store's query
        job_id, index, number = key

        def handler() -> Outcome:
            attempt = self.shell.find_attempt(job_id, index, number)
            return self.shell.pe_tasks.ended(self.shell.state, attempt, node, message)

        try:
            self.shell.run(handler, Scope(jobs=frozenset({job_id})))
        except DroverError as fault:
            log.error("the end of task %s of %s is not recorded yet: %s", message.petask, message.attempt, fault)
            return False
        return True

    def _kept(self, node: str, message: NodeMessage) -> bool:
        """Staged-out files are on disk before they are acknowledged. Files that cannot be kept
        (the controller's disk is full, a chunk is missing) are not acknowledged: the node tries
        again, and after its stage_out_tries gives them up, in an event that says so; the job
        goes on. Only the node that ran the attempt sends its files: another's are not kept (they
        would replace what the job staged out), and are acknowledged (on_reports) as its other
        reports of the attempt are."""
        if not isinstance(message, StagedOut):
            return True
        try:
            if not self._ran_on(node, message.attempt):
                return True
        except StoreFault as fault:
            log.warning("cannot tell which node ran attempt %s, whose files node %s sent: %s", message.attempt[:100],
                        node, fault)
            return False  # not acknowledged: the node sends them again
        try:
            staged_files.keep(self.settings.files_dir, message)
            return True
        except (OSError, ValueError, staged_files.NotKept, NotFound) as error:  # NotFound: a name outside
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            log.error("cannot keep the files attempt %s staged out, in %s: %s", message.attempt[:100],
                      self.settings.files_dir, reason)
            return False

    def _forget_partial(self, node: str, name: str) -> None:
        """The node gave up staging out the attempt's files: what it sent of them goes. Only the
        node that ran the attempt sends its files, and only it may have them forgotten: another's
        word would delete what the attempt's own node is sending (a store that cannot say which
        node ran it leaves them; they go when that node gives up or its files are kept)."""
        try:
            if self._ran_on(node, name):
                staged_files.forget_partial(self.settings.files_dir, name)
        except StoreFault as fault:
            log.warning("cannot tell which node ran attempt %s, whose files node %s gave up: %s", name[:100], node,
                        fault)

    def _ran_on(self, node: str, name: str) -> bool:
        """Whether `node` ran the attempt `name` names (attempt_nodes.ran_on), the store asked for
        an attempt the working set no longer holds (its job ended). A name Drover could not have
        made names no attempt, and is not asked of the store."""
        key = bounded_attempt_key(name)
        if key is None:
            return False
        return ran_on(self.shell.state, node, name, lambda _: self.shell.store.attempt_nodes([key]).get(key))

    def _chunk_kept(self, node: str, chunk: StagedChunk) -> ChunkKept:
        """A chunk of a staged-out file, written where its file is assembled. Only the node
        that ran the attempt sends its files."""
        attempt = self.shell.state.attempt_by_name(chunk.attempt)
        # The name as Drover spells it, too: the in-memory lookup reads '01.0.1' as attempt 1.0.1,
        # and such a name, which makes no directory, failed the node's whole frame.
        if attempt is None or attempt.node != node or attempt.name != chunk.attempt:
            return ChunkKept(chunk.attempt, chunk.record, refused="not an attempt this node ran")
        try:
            return staged_files.keep_chunk(self.settings.files_dir, chunk, self.settings.limits.max_stage_out_bytes)
        except OSError as error:
            log.error("cannot keep a chunk of the files attempt %s staged out, in %s: %s", chunk.attempt,
                      self.settings.files_dir, error.strerror or error)
            return ChunkKept(chunk.attempt, chunk.record, error=f"the controller cannot keep it: {error.strerror or error}")

