"""What wait4's ru_maxrss says of the job's memory, once the mark its first process inherited is
known.

Linux keeps a process's ru_maxrss in its signal struct, which exec keeps. At exec the old
address space's high-water mark of resident pages is folded into it (fs/exec.c, exec_mmap:
setmax_mm_hiwater_rss(&tsk->signal->maxrss, old_mm)), and at exit the process's own (kernel/exit.c,
do_exit); wait4 reports the larger of that and the largest of its waited-for children's. The
job's first process is the shepherd's vfork (posix_spawn, launch.py) or fork (Popen): the
address space it leaves at exec is the shepherd's own (vfork), or a copy of it whose mark starts
at the copy's resident set (kernel/fork.c, dup_mm), which is lower than the shepherd's: the
page tables of file mappings without anonymous pages are not copied (mm/memory.c,
vma_needs_copy), so their pages are not resident in the copy until touched (measured: 10.5 MiB
in the copy of 14.4 MiB). Either way a job of /bin/true would report most of the Python
shepherd's resident set, 10 MiB or more, and after a vfork a shepherd that once held more (it
serves attempt after attempt) would report that.

So the shepherd lowers its own mark to its resident set just before it starts the job (writing
5 to /proc/self/clear_refs: reset_mm_hiwater_rss), reads it just after (vfork: the child has
exec'ed by then), and the job's ru_maxrss is the job's own only where it is above that mark.
The mark read is at or above the one a fork's copy started from, and at or above what the
vfork'ed child inherited at exec but in one case: VmHWM is the larger of the stored mark and
the resident set now, and the kernel raises the stored mark when pages are unmapped, not when
reclaim takes them; pages the shepherd touched between the lowering and the exec, reclaimed
before the read, would leave the read mark under the inherited one. The window is a few system calls, in which the
shepherd allocates little, and memory pressure enough to reclaim from it in that time is rare.
Where the job's ru_maxrss is not above the mark, every process of the job stayed at or under the
mark, and how far under is not known: the figure is then 0 (not known), and the mark is kept
beside it. The job's children are not concerned: each is forked from the job and starts from the
job's own pages.
"""

from __future__ import annotations

NOT_KNOWN = 0  # the max_rss_kib of a job whose processes all stayed at or under the inherited mark


def lower_own_mark() -> None:
    """Bring the shepherd's high-water mark down to what it holds now (Linux 4.0+), so that a
    peak of an earlier attempt's work is not what the next job inherits. Best effort: where it
    cannot, the mark read after the start is only higher, and the figure more often not known."""
    try:
        with open("/proc/self/clear_refs", "wb", buffering=0) as refs:
            refs.write(b"5")
    except OSError:
        pass


def own_mark_kib() -> int | None:
    """The shepherd's high-water mark of resident memory now (VmHWM), in KiB; None where /proc
    does not say."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def job_max_rss_kib(ru_maxrss_kib: int, inherited_kib: int | None) -> int:
    """wait4's figure where it is the job's own (above the inherited mark), else NOT_KNOWN."""
    if inherited_kib is None or ru_maxrss_kib <= inherited_kib:
        return NOT_KNOWN
    return ru_maxrss_kib
