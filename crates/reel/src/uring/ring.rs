//! One io_uring instance and the batched execution of read requests on it.
//!
//! The contract that makes this sound: the kernel writes into the caller's buffers (or the
//! ring's bounce buffer) asynchronously, so no function here returns — by value, by error
//! or by unwinding — while a read it submitted is still in flight. [`Drain`] enforces that
//! on every exit path.

use std::io;
use std::os::fd::RawFd;

use io_uring::{IoUring, opcode, squeue, types};
use reel_core::io::cancel::CancelCheck;
use reel_core::io::{Arrived, coalesce_runs, dest_slice};
use reel_core::{Error, ReadReq, Result};

use super::aligned::AlignedBuf;

/// Submission queue size: the most reads in flight on one ring.
pub(crate) const RING_ENTRIES: u32 = 256;

/// With an observer (checksums), buffered reads are handed to the kernel in submissions of
/// about this many bytes, and what has completed is handed over before the next ones are
/// pushed. Reads of cached pages complete inside the submission, so their bytes are
/// checked while they are still in the core's cache (half of this VM's 1 MiB of L2 per
/// core), not after the whole batch's copies have pushed them out to memory: submitted all
/// at once, 256 reads of 100 KiB (25 MB) were checked from memory and the checksum cost
/// +32 % warm. Reads that wait for the disk stay in flight while the next submissions go
/// in, so the queue still fills to [`RING_ENTRIES`].
const OBSERVED_SUBMIT_BYTES: usize = 512 << 10;

/// Bytes of each of a ring's two read-ahead areas (see [`Ahead`]): a batch's aligned reads
/// up to this size are read ahead when hinted (256 records of 1 KiB take about 1.3 MiB,
/// of 16 KiB about 5 MiB); what does not fit is read when the batch is.
const AHEAD_AREA: usize = 8 << 20;

/// Marks a completion as a read-ahead's: this bit, the area in [`AHEAD_AREA_BIT`], the
/// piece's number below. A batch's own reads are numbered from 0 and never reach them.
const AHEAD_TAG: u64 = 1 << 63;
const AHEAD_AREA_BIT: u64 = 1 << 62;

/// Where one read-ahead piece stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AheadState {
    /// Planned, not yet handed to the kernel (the ring was full).
    Waiting,
    InFlight,
    /// Read up to what its requests need.
    Done,
    /// Short, interrupted or failed: the batch's read reads it again itself, which reports
    /// any error with its context.
    Failed,
}

/// The aligned reads of one hinted batch, landing in one read-ahead area.
#[derive(Default)]
struct AheadSet {
    /// The leading aligned reads of the hinted batch's plan that fit in the area; `bounce`
    /// is their place in the bounce buffer. A read whose plan starts with the same reads
    /// (the same file ranges) takes their bytes, whichever requests they serve there.
    pieces: Vec<Piece>,
    state: Vec<AheadState>,
    /// `pieces[..pushed]` have been handed to the kernel.
    pushed: usize,
    in_flight: usize,
    /// Holds a hint nobody has read yet.
    live: bool,
}

/// Reads of the next batch started before that batch is asked for
/// ([`ReadAt::will_read`](reel_core::ReadAt::will_read)), so that the device has work
/// while the current batch's last reads complete: the queue no longer drains at every
/// batch boundary. They land in memory the ring owns (two areas after the batch's own part
/// of the bounce buffer, used in turn: one filling for the next batch while the other is
/// copied out for this one), never in a caller's buffer, so a hint that is never read costs
/// only its reads, and the ring waits for them before it lets that memory go. Being part
/// of the registered bounce buffer, they are read with `READ_FIXED` like the batch's own
/// reads: unregistered, every read pinned its pages and cost a third more CPU.
#[derive(Default)]
struct Ahead {
    sets: [AheadSet; 2],
    /// The area the next hint fills.
    next: usize,
    /// Pieces hinted and pieces a batch took from the read-ahead, since last asked.
    hinted: u64,
    served: u64,
}

impl Ahead {
    /// Read-ahead reads in flight, both areas.
    fn in_flight(&self) -> usize {
        self.sets[0].in_flight + self.sets[1].in_flight
    }

    /// Records the completion of read-ahead piece `data` (its tagged user data).
    fn completed(&mut self, data: u64, res: i32) {
        let area = usize::from(data & AHEAD_AREA_BIT != 0);
        let k = (data & !(AHEAD_TAG | AHEAD_AREA_BIT)) as usize;
        let set = &mut self.sets[area];
        set.in_flight = set.in_flight.saturating_sub(1);
        if let (Some(p), Some(state)) = (set.pieces.get(k), set.state.get_mut(k)) {
            let ok = usize::try_from(res).is_ok_and(|n| n >= p.needed);
            *state = if ok { AheadState::Done } else { AheadState::Failed };
        }
    }

    /// The area whose hint was planned into exactly the leading reads of `pieces`, if one
    /// was.
    fn matching(&self, pieces: &[Piece]) -> Option<usize> {
        (0..2).find(|&a| {
            let set = &self.sets[a];
            set.live
                && set.pieces.len() <= pieces.len()
                && set.pieces.iter().zip(pieces).all(|(a, b)| {
                    (a.file, a.offset, a.len, a.needed) == (b.file, b.offset, b.len, b.needed)
                })
        })
    }
}

/// The largest aligned read the `O_DIRECT` path makes, for a bounce buffer of `bounce_len`
/// bytes: a hint and the read it announces must cut a batch into the same pieces.
fn piece_max(bounce_len: usize, align: usize) -> usize {
    (bounce_len / 4) / align * align
}

/// Creates an io_uring instance of [`RING_ENTRIES`] entries with
/// `IORING_SETUP_COOP_TASKRUN` (Linux 5.19+): completions are handed to the submitting
/// thread when it next enters the kernel, which it does to wait for them anyway, instead of
/// interrupting it. On kernels that refuse the flag the ring is made without it.
///
/// Of the setup flags tried for these reads, this is the one that measured better (2026-11-28,
/// cold 1 KiB–256 KiB reads on the 2-core VM, `reel bench --mode cold --threads 2`, runs
/// alternating): with two reading threads, CPU per record lower by up to 15 % in most
/// pairs of runs; with one, the same within the noise; records/s unchanged within it.
/// `SINGLE_ISSUER` + `DEFER_TASKRUN` changed nothing measurable (and would bind each ring to
/// the thread that made it, while rings here are pooled between threads); `SQPOLL` cost
/// 5–10× the CPU per record (its kernel thread polls) and read 5 % fewer 1 KiB records.
fn build_ring() -> io::Result<IoUring> {
    IoUring::builder()
        .setup_coop_taskrun()
        .build(RING_ENTRIES)
        .or_else(|_| IoUring::builder().build(RING_ENTRIES))
}

/// How a ring addresses files: registered (fixed) slots or raw descriptors.
#[derive(Clone, Copy)]
pub(crate) enum FileSlots {
    Registered,
    Raw,
}

/// What the `O_DIRECT` path needs of the files it reads: their descriptors and lengths, the
/// offset alignment, and the size of the bounce buffer and whether to register it.
#[derive(Clone, Copy)]
pub(crate) struct DirectFiles<'a> {
    pub(crate) fds: &'a [RawFd],
    pub(crate) lens: &'a [u64],
    pub(crate) align: usize,
    pub(crate) bounce_len: usize,
    pub(crate) register: bool,
}

/// An io_uring instance with its scratch space, owned by one thread at a time.
pub(crate) struct Ring {
    ring: IoUring,
    files: FileSlots,
    /// The bounce buffer for O_DIRECT reads, created on first use: the batch's own part
    /// (the first `.1` bytes) and the two read-ahead areas after it; and whether it is
    /// registered with the ring (as buffer 0; then reads of it are `READ_FIXED`).
    bounce: Option<(AlignedBuf, usize, bool)>,
    /// The batch's requests sorted by position (empty ones left out) ...
    ops: Vec<ReadReq>,
    /// ... and the position of each in the caller's batch.
    order: Vec<usize>,
    pieces: Vec<Piece>,
    merged: Vec<ReadReq>,
    /// Per merged read: the positions in `ops` of the requests it serves.
    runs: Vec<std::ops::Range<usize>>,
    done: Vec<usize>,
    queue: Vec<usize>,
    /// Per sorted request: bytes not yet copied out of the bounce buffer (O_DIRECT).
    left: Vec<usize>,
    /// Scratch for the destination-overlap check.
    dests: Vec<(usize, usize)>,
    /// The pieces a batch reads itself, in order (O_DIRECT).
    todo: Vec<usize>,
    /// Reads of hinted batches (O_DIRECT).
    ahead: Ahead,
}

/// One aligned read of the O_DIRECT path and where its bytes go.
#[derive(Clone, Copy, Debug)]
struct Piece {
    file: u32,
    /// Aligned file offset and length of the read.
    offset: u64,
    len: usize,
    /// Where in the bounce buffer it lands.
    bounce: usize,
    /// Bytes completed so far.
    done: usize,
    /// Bytes that must be read for the piece to be useful (up to the end of the last
    /// request it serves; the aligned tail past the file end may legitimately be short).
    needed: usize,
    /// The sorted requests this piece serves: `ops[first..end]`.
    first: usize,
    end: usize,
}

impl Ring {
    /// Creates a ring; `fds` are registered when `register` is set and the kernel allows it.
    pub(crate) fn new(fds: &[RawFd], register: bool) -> io::Result<Ring> {
        let ring = build_ring()?;
        let files = if register && ring.submitter().register_files(fds).is_ok() {
            FileSlots::Registered
        } else {
            FileSlots::Raw
        };
        Ok(Ring {
            ring,
            files,
            bounce: None,
            ops: Vec::new(),
            order: Vec::new(),
            pieces: Vec::new(),
            merged: Vec::new(),
            runs: Vec::new(),
            done: Vec::new(),
            queue: Vec::new(),
            left: Vec::new(),
            dests: Vec::new(),
            todo: Vec::new(),
            ahead: Ahead::default(),
        })
    }

    /// Pieces hinted and pieces served from read-ahead since the last call (then zeroed).
    pub(crate) fn take_ahead_counts(&mut self) -> (u64, u64) {
        let counts = (self.ahead.hinted, self.ahead.served);
        (self.ahead.hinted, self.ahead.served) = (0, 0);
        counts
    }

    /// Starts the `O_DIRECT` reads of `reqs` (the batch a later
    /// [`read_direct`](Self::read_direct) of the same requests will ask for) into the next
    /// read-ahead area, as many as the ring has room for; the rest are handed to the kernel
    /// as room frees up during later reads. Returns without waiting for them. Any failure
    /// leaves the hint out: the read proper then reads everything itself.
    pub(crate) fn read_ahead(&mut self, files: DirectFiles<'_>, reqs: &[ReadReq]) -> Result<()> {
        let DirectFiles { fds, lens: file_lens, align, bounce_len, register } = files;
        let align = align.max(1);
        let (bounce_ptr, own_len, registered) = self.bounce_buffer(bounce_len, align, register)?;
        let area = self.ahead.next;
        self.ahead.next ^= 1;
        let slots = self.files;
        // The area may still be filling for a hint nobody read: its memory is reused only
        // once the kernel is done with it.
        Drain::new(&mut self.ring, &mut self.ahead)
            .wait_while(|d| d.ahead.sets[area].in_flight > 0);
        self.sort_ops(reqs);
        let set = &mut self.ahead.sets[area];
        set.live = false;
        plan_pieces(&self.ops, file_lens, align, piece_max(own_len, align), &mut set.pieces);
        let mut used = 0;
        let fits = set.pieces.iter().take_while(|p| {
            used += p.len;
            used <= AHEAD_AREA
        });
        let keep = fits.count();
        set.pieces.truncate(keep);
        let mut at = own_len + area * AHEAD_AREA;
        for p in &mut set.pieces {
            p.bounce = at;
            at += p.len;
        }
        set.state.clear();
        set.state.resize(keep, AheadState::Waiting);
        (set.pushed, set.in_flight, set.live) = (0, 0, keep > 0);
        self.ahead.hinted += keep as u64;
        let mut drain = Drain::new(&mut self.ring, &mut self.ahead);
        // The other area's waiting reads are for an earlier batch: they go first.
        let bounce = (bounce_ptr, registered);
        while drain.push_ahead(area ^ 1, slots, fds, bounce)? {}
        while drain.push_ahead(area, slots, fds, bounce)? {}
        drain.submit_and_wait(0)
    }

    /// The ring's `O_DIRECT` bounce buffer, made on first use: its address, the length of
    /// the batch's own part (`bounce_len`, at least one alignment unit; the two read-ahead
    /// areas follow it), and whether the kernel registered it.
    fn bounce_buffer(
        &mut self,
        bounce_len: usize,
        align: usize,
        register: bool,
    ) -> Result<(*mut u8, usize, bool)> {
        if self.bounce.is_none() {
            let own = bounce_len.max(align.max(4096)).div_ceil(align) * align;
            let total = own.checked_add(2 * AHEAD_AREA).unwrap_or(own);
            let mut buf = AlignedBuf::new(total, align.max(4096)).ok_or_else(|| {
                Error::new(reel_core::ErrorKind::Io, "cannot allocate the O_DIRECT buffer")
            })?;
            let iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
            // SAFETY: the buffer lives as long as the ring (both owned by self; `Ring`'s drop
            // waits for every read into it, and the ring is dropped before it because it is
            // declared first) and is only used by this ring. A refusal (ENOMEM past
            // RLIMIT_MEMLOCK, for users without CAP_IPC_LOCK) leaves the buffer unregistered:
            // reads then name it by address, as buffered reads do.
            let registered =
                register && unsafe { self.ring.submitter().register_buffers(&[iov]) }.is_ok();
            self.bounce = Some((buf, own, registered));
        }
        let Some((buf, own, registered)) = self.bounce.as_mut() else {
            return Err(Error::invalid_input("no bounce buffer"));
        };
        Ok((buf.as_mut_ptr(), *own, *registered))
    }

    /// Sorts the non-empty requests by position into `ops` (and their batch positions into
    /// `order`) and checks each against `dest`.
    fn sort_requests(&mut self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        self.sort_ops(reqs);
        for r in &self.ops {
            dest_slice(dest, r)?;
        }
        Ok(())
    }

    /// Sorts the non-empty requests by position into `ops` (and their batch positions into
    /// `order`).
    fn sort_ops(&mut self, reqs: &[ReadReq]) {
        self.order.clear();
        self.order.extend((0..reqs.len()).filter(|&k| reqs[k].len > 0));
        self.order.sort_unstable_by_key(|&k| (reqs[k].file, reqs[k].offset));
        self.ops.clear();
        self.ops.extend(self.order.iter().map(|&k| reqs[k]));
    }

    /// Whether two requests' destinations overlap: then a finished request's bytes may
    /// still be written by another read, and none is handed over before all are done.
    fn dests_overlap(&mut self) -> bool {
        self.dests.clear();
        self.dests.extend(self.ops.iter().map(|r| (r.dest, r.dest + r.len)));
        self.dests.sort_unstable();
        self.dests.windows(2).any(|w| w[1].0 < w[0].1)
    }

    /// Reads every request straight into `dest` with buffered reads. With `arrived`, each
    /// request's bytes are handed over as soon as its read completes, while the others are
    /// still in flight (see [`ReadAt::read_many_observed`](reel_core::ReadAt)).
    pub(crate) fn read_buffered(
        &mut self,
        fds: &[RawFd],
        reqs: &[ReadReq],
        dest: &mut [u8],
        describe: &dyn Fn(u32, u64, io::Error) -> Error,
        mut arrived: Option<&mut Arrived<'_>>,
    ) -> Result<()> {
        // Sorted by position, neighbouring requests merge into one read and the device
        // sees an ascending sweep.
        self.sort_requests(reqs, dest)?;
        let hand_over_early = arrived.is_some() && !self.dests_overlap();
        self.merged.clear();
        self.runs.clear();
        for (merged, run) in coalesce_runs(&self.ops) {
            self.merged.push(merged);
            self.runs.push(run);
        }
        self.done.clear();
        self.done.resize(self.merged.len(), 0);
        self.queue.clear();
        let base = dest.as_mut_ptr();
        let (slots, merged, done, retry) =
            (self.files, &self.merged, &mut self.done, &mut self.queue);
        let (ops, order, runs) = (&self.ops, &self.order, &self.runs);
        let target = |file: u32| target_of(slots, fds, file);
        let cancel = CancelCheck::current();
        let mut drain = Drain::new(&mut self.ring, &mut self.ahead);
        let mut next = 0;
        let mut first_error: Option<Error> = None;
        while next < merged.len() || !retry.is_empty() || drain.in_flight > 0 {
            // A cancelled batch submits nothing more and ends with the reads in flight.
            if first_error.is_none()
                && let Err(e) = cancel.check()
            {
                first_error = Some(e);
            }
            let mut pushed_bytes = 0;
            while first_error.is_none() && drain.room() {
                if hand_over_early && pushed_bytes >= OBSERVED_SUBMIT_BYTES {
                    break;
                }
                let k = match retry.pop() {
                    Some(k) => k,
                    None if next < merged.len() => {
                        next += 1;
                        next - 1
                    }
                    None => break,
                };
                let r = &merged[k];
                let (off, len) = (done[k], r.len - done[k]);
                // SAFETY: `dest[r.dest .. r.dest + r.len]` was bounds-checked above and
                // stays borrowed (`dest`) until this function returns, which `Drain`
                // delays until the kernel has finished with it.
                let ptr = unsafe { base.add(r.dest + off) };
                let entry =
                    target(r.file).read(ptr, len, r.offset + off as u64).user_data(k as u64);
                drain.push(&entry)?;
                pushed_bytes += len;
            }
            if first_error.is_some() && drain.in_flight == 0 {
                break;
            }
            if drain.in_flight == 0 {
                if !drain.room() {
                    // The ring is full of read-ahead: room comes as those complete.
                    drain.wait_for_ahead()?;
                }
                continue;
            }
            let more_to_push =
                first_error.is_none() && drain.room() && (next < merged.len() || !retry.is_empty());
            // See OBSERVED_SUBMIT_BYTES: submitted without waiting, then what completed
            // inside the submission is handed over while it is in the cache.
            drain.submit_and_wait(if hand_over_early && more_to_push { 0 } else { 1 })?;
            while let Some((k, res)) = drain.next_completion() {
                let r = &merged[k];
                match res {
                    n if n > 0 => {
                        done[k] += n as usize;
                        if done[k] < r.len {
                            retry.push(k);
                        } else if let Some(arrived) =
                            arrived.as_deref_mut().filter(|_| hand_over_early)
                            && first_error.is_none()
                        {
                            for j in runs[k].clone() {
                                let req = &ops[j];
                                // SAFETY: the read that wrote these bytes has completed and
                                // no other read in flight writes them (destinations do not
                                // overlap, checked above); they lie in `dest` (checked).
                                let bytes = unsafe {
                                    std::slice::from_raw_parts(base.add(req.dest), req.len)
                                };
                                if let Err(e) = arrived.arrived(order[j], bytes) {
                                    first_error = Some(e);
                                    break;
                                }
                            }
                        }
                    }
                    0 => {
                        first_error.get_or_insert_with(|| {
                            describe(
                                r.file,
                                r.offset + done[k] as u64,
                                io::ErrorKind::UnexpectedEof.into(),
                            )
                        });
                    }
                    e if e == -libc::EAGAIN || e == -libc::EINTR => retry.push(k),
                    e => {
                        first_error.get_or_insert_with(|| {
                            describe(
                                r.file,
                                r.offset + done[k] as u64,
                                io::Error::from_raw_os_error(-e),
                            )
                        });
                    }
                }
            }
            if first_error.is_some() {
                retry.clear();
            }
        }
        drain.finish()?;
        if let Some(e) = first_error {
            return Err(e);
        }
        match arrived {
            Some(arrived) if !hand_over_early => hand_over(ops, order, dest, arrived),
            _ => Ok(()),
        }
    }

    /// Reads every request through O_DIRECT: aligned supersets into the bounce buffer
    /// (registered with the ring when `register` is set and the kernel allows it), then a
    /// copy of the wanted bytes into `dest`, made as soon as each aligned read completes.
    /// Requests whose aligned blocks touch share one read. With `arrived`, a request is
    /// handed over once all its bytes are copied, while other reads are in flight.
    pub(crate) fn read_direct(
        &mut self,
        files: DirectFiles<'_>,
        reqs: &[ReadReq],
        dest: &mut [u8],
        describe: &dyn Fn(u32, u64, io::Error) -> Error,
        mut arrived: Option<&mut Arrived<'_>>,
    ) -> Result<()> {
        let DirectFiles { fds, lens: file_lens, align, bounce_len, register } = files;
        self.sort_requests(reqs, dest)?;
        let (bounce_ptr, bounce_len, registered) =
            self.bounce_buffer(bounce_len, align, register)?;
        plan_pieces(&self.ops, file_lens, align, piece_max(bounce_len, align), &mut self.pieces);
        // Bytes of each request still to be copied; a request is handed over at 0. The
        // kernel writes only into the bounce buffer, so overlapping destinations are fine.
        self.left.clear();
        self.left.extend(self.ops.iter().map(|r| r.len));
        // A hint for exactly this batch has its leading pieces read (or in flight) already.
        let hinted = self.ahead.matching(&self.pieces);

        let slots = self.files;
        let target = |file: u32| target_of(slots, fds, file);
        let (ops, order, left) = (&self.ops, &self.order, &mut self.left);
        let pieces = &mut self.pieces;
        let (queue, todo) = (&mut self.queue, &mut self.todo);
        let cancel = CancelCheck::current();
        let mut drain = Drain::new(&mut self.ring, &mut self.ahead);
        let mut first_error: Option<Error> = None;
        todo.clear();
        if let Some(area) = hinted {
            let taken = drain.ahead.sets[area].pieces.len();
            // Those still waiting are this batch's now, ahead of any other; while they
            // complete, the other area's (the next batch's) fill the ring's free room.
            loop {
                while drain.push_ahead(area, slots, fds, (bounce_ptr, registered))? {}
                while drain.push_ahead(area ^ 1, slots, fds, (bounce_ptr, registered))? {}
                let set = &drain.ahead.sets[area];
                if set.in_flight == 0 && set.pushed == set.pieces.len() {
                    break;
                }
                if let Err(e) = cancel.check() {
                    // Reads in flight land in the ring's own memory: nothing to wait for.
                    drain.ahead.sets[area].live = false;
                    return Err(e);
                }
                drain.wait_for_ahead()?;
            }
            let Ahead { sets, served, .. } = &mut *drain.ahead;
            let set = &mut sets[area];
            set.live = false;
            for (k, (ahead_piece, &state)) in set.pieces.iter().zip(&set.state).enumerate() {
                if state != AheadState::Done {
                    todo.push(k);
                    continue;
                }
                *served += 1;
                // SAFETY: this piece's read has completed and nothing reads into its part of
                // the read-ahead buffer again before the area is hinted anew, which happens
                // only after this call (the ring is this thread's until it returns).
                let piece_bytes = unsafe {
                    std::slice::from_raw_parts(bounce_ptr.add(ahead_piece.bounce), ahead_piece.len)
                };
                let delivered = deliver_piece(
                    &pieces[k],
                    piece_bytes,
                    (&ops[..], &order[..]),
                    left,
                    dest,
                    arrived.as_deref_mut(),
                );
                if let Err(e) = delivered {
                    first_error = Some(e);
                    break;
                }
            }
            todo.extend(taken..pieces.len());
        } else {
            todo.extend(0..pieces.len());
        }
        let mut next = 0;
        while next < todo.len() && first_error.is_none() {
            // One wave: as many pieces as fit in the bounce buffer.
            let mut used = 0;
            let wave_start = next;
            while next < todo.len() && used + pieces[todo[next]].len <= bounce_len {
                let p = &mut pieces[todo[next]];
                (p.bounce, p.done) = (used, 0);
                used += p.len;
                next += 1;
            }
            queue.clear();
            queue.extend(todo[wave_start..next].iter().rev());
            while !queue.is_empty() || drain.in_flight > 0 {
                // A cancelled batch submits nothing more and ends with the reads in flight.
                if first_error.is_none()
                    && let Err(e) = cancel.check()
                {
                    first_error = Some(e);
                }
                while first_error.is_none() && drain.room() {
                    let Some(k) = queue.pop() else {
                        // This wave is all in flight: the next batch's read-ahead may use
                        // the room left.
                        if drain.push_ahead_any(slots, fds, (bounce_ptr, registered))? {
                            continue;
                        }
                        break;
                    };
                    let p = &pieces[k];
                    // SAFETY: `bounce[p.bounce + p.done .. p.bounce + p.len]` lies in the
                    // bounce buffer, which outlives this call; Drain waits for the read.
                    let ptr = unsafe { bounce_ptr.add(p.bounce + p.done) };
                    let (len, at) = (p.len - p.done, p.offset + p.done as u64);
                    let entry = match registered {
                        true => target(p.file).read_fixed(ptr, len, at),
                        false => target(p.file).read(ptr, len, at),
                    };
                    let entry = entry.user_data(k as u64);
                    drain.push(&entry)?;
                }
                if drain.in_flight == 0 {
                    if first_error.is_some() || queue.is_empty() {
                        break;
                    }
                    if !drain.room() {
                        // The ring is full of read-ahead: room comes as those complete.
                        drain.wait_for_ahead()?;
                    }
                    continue;
                }
                drain.submit_and_wait(1)?;
                while let Some((k, res)) = drain.next_completion() {
                    let p = &mut pieces[k];
                    let mut complete = false;
                    match res {
                        n if n > 0 => {
                            p.done += n as usize;
                            // O_DIRECT only returns short at the end of the file, where the
                            // aligned tail does not exist; anything before `needed` is retried.
                            if p.done < p.needed
                                && (p.offset + p.done as u64).is_multiple_of(align as u64)
                            {
                                queue.push(k);
                            } else if p.done < p.needed {
                                first_error.get_or_insert_with(|| {
                                    describe(
                                        p.file,
                                        p.offset + p.done as u64,
                                        io::ErrorKind::UnexpectedEof.into(),
                                    )
                                });
                            } else {
                                complete = true;
                            }
                        }
                        0 if p.done < p.needed => {
                            first_error.get_or_insert_with(|| {
                                describe(
                                    p.file,
                                    p.offset + p.done as u64,
                                    io::ErrorKind::UnexpectedEof.into(),
                                )
                            });
                        }
                        0 => complete = true,
                        e if e == -libc::EAGAIN || e == -libc::EINTR => queue.push(k),
                        e => {
                            first_error.get_or_insert_with(|| {
                                describe(
                                    p.file,
                                    p.offset + p.done as u64,
                                    io::Error::from_raw_os_error(-e),
                                )
                            });
                        }
                    }
                    if !complete || first_error.is_some() {
                        continue;
                    }
                    // SAFETY: this piece's read has completed and is not resubmitted, so its
                    // part of the bounce buffer is no longer written; other reads in flight
                    // write only their own, disjoint parts.
                    let piece_bytes =
                        unsafe { std::slice::from_raw_parts(bounce_ptr.add(p.bounce), p.len) };
                    let sorted = (&ops[..], &order[..]);
                    let arrived = arrived.as_deref_mut();
                    if let Err(e) = deliver_piece(p, piece_bytes, sorted, left, dest, arrived) {
                        first_error = Some(e);
                    }
                }
                if first_error.is_some() {
                    queue.clear();
                }
            }
        }
        drain.finish()?;
        first_error.map_or(Ok(()), Err)
    }
}

/// Copies what the completed piece `p` (its bytes `piece_bytes`) holds of the sorted
/// requests it serves (`sorted`: the requests and their places in the batch) into `dest`,
/// and hands each request whose bytes are now all copied (`left` reaches 0) to `arrived`.
fn deliver_piece(
    p: &Piece,
    piece_bytes: &[u8],
    (ops, order): (&[ReadReq], &[usize]),
    left: &mut [usize],
    dest: &mut [u8],
    mut arrived: Option<&mut Arrived<'_>>,
) -> Result<()> {
    for j in p.first..p.end {
        let copied = copy_out(p, &ops[j], piece_bytes, dest);
        if copied == 0 {
            continue;
        }
        left[j] -= copied;
        if left[j] > 0 {
            continue;
        }
        if let Some(arrived) = arrived.as_deref_mut() {
            arrived.arrived(order[j], &dest[ops[j].dest..][..ops[j].len])?;
        }
    }
    Ok(())
}

/// Hands every request's bytes over once all reads are done, in batch order.
fn hand_over(
    ops: &[ReadReq],
    order: &[usize],
    dest: &[u8],
    arrived: &mut Arrived<'_>,
) -> Result<()> {
    for (r, &k) in ops.iter().zip(order) {
        arrived.arrived(k, &dest[r.dest..][..r.len])?;
    }
    Ok(())
}

/// Splits the sorted requests into aligned reads: requests whose aligned ranges touch are
/// grouped, and a group is cut into pieces of at most `piece_max` bytes.
fn plan_pieces(
    ops: &[ReadReq],
    file_lens: &[u64],
    align: usize,
    piece_max: usize,
    out: &mut Vec<Piece>,
) {
    out.clear();
    let a = align as u64;
    let mut i = 0;
    while i < ops.len() {
        let file = ops[i].file;
        let start = ops[i].offset / a * a;
        let mut end = ops[i].offset + ops[i].len as u64;
        let mut j = i + 1;
        while j < ops.len() && ops[j].file == file && ops[j].offset / a * a <= end.div_ceil(a) * a {
            end = end.max(ops[j].offset + ops[j].len as u64);
            j += 1;
        }
        let aligned_end = end.div_ceil(a) * a;
        let file_len = file_lens.get(file as usize).copied().unwrap_or(0);
        let mut off = start;
        while off < aligned_end {
            let len = (aligned_end - off).min(piece_max as u64);
            let needed_end = end.min(off + len).min(file_len.max(off));
            out.push(Piece {
                file,
                offset: off,
                len: len as usize,
                bounce: 0,
                done: 0,
                needed: (needed_end - off) as usize,
                first: i,
                end: j,
            });
            off += len;
        }
        i = j;
    }
}

/// Copies the part of request `r` that the completed piece `p` covers (its bytes are
/// `piece_bytes`) into `dest`, and returns how many bytes that was.
fn copy_out(p: &Piece, r: &ReadReq, piece_bytes: &[u8], dest: &mut [u8]) -> usize {
    let piece_end = p.offset + p.len as u64;
    let r_end = r.offset + r.len as u64;
    let from = r.offset.max(p.offset);
    let to = r_end.min(piece_end);
    if from >= to {
        return 0;
    }
    let n = (to - from) as usize;
    let src = (from - p.offset) as usize;
    let dst = r.dest + (from - r.offset) as usize;
    dest[dst..dst + n].copy_from_slice(&piece_bytes[src..src + n]);
    n
}

#[derive(Clone, Copy)]
enum Target {
    Fixed(types::Fixed),
    Fd(types::Fd),
}

impl Target {
    fn read(self, ptr: *mut u8, len: usize, offset: u64) -> squeue::Entry {
        let len = len.min(u32::MAX as usize & !4095) as u32;
        match self {
            Target::Fixed(f) => opcode::Read::new(f, ptr, len).offset(offset).build(),
            Target::Fd(f) => opcode::Read::new(f, ptr, len).offset(offset).build(),
        }
    }

    fn read_fixed(self, ptr: *mut u8, len: usize, offset: u64) -> squeue::Entry {
        let len = len as u32;
        match self {
            Target::Fixed(f) => opcode::ReadFixed::new(f, ptr, len, 0).offset(offset).build(),
            Target::Fd(f) => opcode::ReadFixed::new(f, ptr, len, 0).offset(offset).build(),
        }
    }
}

/// How a read names file `file`: its registered slot, or its descriptor.
fn target_of(slots: FileSlots, fds: &[RawFd], file: u32) -> Target {
    match slots {
        FileSlots::Registered => Target::Fixed(types::Fixed(file)),
        FileSlots::Raw => Target::Fd(types::Fd(fds.get(file as usize).copied().unwrap_or(-1))),
    }
}

/// Tracks reads in flight and refuses to let the ring go (return or unwind) until the
/// kernel has completed every one of them. Read-ahead reads ([`Ahead`]) are not waited
/// for here (they land in the ring's own memory, and [`Ring`]'s drop waits for them); their
/// completions are recorded as they come, and they count against the ring's room.
struct Drain<'r> {
    ring: &'r mut IoUring,
    ahead: &'r mut Ahead,
    in_flight: usize,
}

impl<'r> Drain<'r> {
    fn new(ring: &'r mut IoUring, ahead: &'r mut Ahead) -> Self {
        Drain { ring, ahead, in_flight: 0 }
    }

    /// Whether another read fits: the completion queue never holds more than the ring's
    /// reads in flight, the batch's and the read-ahead's together.
    fn room(&self) -> bool {
        self.in_flight + self.ahead.in_flight() < RING_ENTRIES as usize
    }

    fn push(&mut self, entry: &squeue::Entry) -> Result<()> {
        self.push_entry(entry)?;
        self.in_flight += 1;
        Ok(())
    }

    fn push_entry(&mut self, entry: &squeue::Entry) -> Result<()> {
        loop {
            // SAFETY: the entry's buffer stays valid until its completion is reaped (the
            // callers' contract above, and for read-ahead the ring's own buffer, which
            // `Ring`'s drop keeps until then); the entry itself is copied into the queue.
            let pushed = unsafe { self.ring.submission().push(entry) };
            if pushed.is_ok() {
                return Ok(());
            }
            // The submission queue is full: hand it to the kernel and try again.
            self.submit_and_wait(0)?;
        }
    }

    /// Hands the next waiting read-ahead piece of `area` to the kernel if there is one and
    /// the ring has room; returns whether it did.
    /// `bounce` is the ring's bounce buffer (its address, and whether it is registered).
    fn push_ahead(
        &mut self,
        area: usize,
        slots: FileSlots,
        fds: &[RawFd],
        bounce: (*mut u8, bool),
    ) -> Result<bool> {
        if !self.room() {
            return Ok(false);
        }
        let set = &mut self.ahead.sets[area];
        let k = set.pushed;
        let Some(p) = set.pieces.get(k).copied() else { return Ok(false) };
        // SAFETY: the piece's place was planned inside a read-ahead area of the bounce
        // buffer (areas of AHEAD_AREA bytes after the batch's own part, pieces that fit),
        // which lives as long as the ring.
        let ptr = unsafe { bounce.0.add(p.bounce) };
        let area_bit = if area == 1 { AHEAD_AREA_BIT } else { 0 };
        let target = target_of(slots, fds, p.file);
        let entry = match bounce.1 {
            true => target.read_fixed(ptr, p.len, p.offset),
            false => target.read(ptr, p.len, p.offset),
        };
        let entry = entry.user_data(AHEAD_TAG | area_bit | k as u64);
        self.push_entry(&entry)?;
        let set = &mut self.ahead.sets[area];
        set.state[k] = AheadState::InFlight;
        set.pushed += 1;
        set.in_flight += 1;
        Ok(true)
    }

    /// [`push_ahead`](Self::push_ahead) from whichever area has a live hint waiting.
    fn push_ahead_any(
        &mut self,
        slots: FileSlots,
        fds: &[RawFd],
        bounce: (*mut u8, bool),
    ) -> Result<bool> {
        for area in 0..2 {
            if self.ahead.sets[area].live && self.push_ahead(area, slots, fds, bounce)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn submit_and_wait(&mut self, want: usize) -> Result<()> {
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => return Ok(()),
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
                    ) =>
                {
                    std::thread::yield_now();
                }
                Err(e) => return Err(Error::io(e, "io_uring_enter failed")),
            }
        }
    }

    /// The next completion of the batch's own reads; read-ahead completions met on the way
    /// are recorded.
    fn next_completion(&mut self) -> Option<(usize, i32)> {
        loop {
            let cqe = self.ring.completion().next()?;
            let data = cqe.user_data();
            if data & AHEAD_TAG != 0 {
                self.ahead.completed(data, cqe.result());
                continue;
            }
            self.in_flight -= 1;
            return Some((data as usize, cqe.result()));
        }
    }

    /// Waits for every read still in flight (after an error), discarding results.
    fn finish(mut self) -> Result<()> {
        self.wait_all();
        Ok(())
    }

    fn wait_all(&mut self) {
        self.wait_while(|drain| drain.in_flight > 0);
    }

    /// Waits for completions while `pending` says so. A failing io_uring_enter with reads in
    /// flight cannot be recovered from: the kernel may still write into the buffers, so it
    /// keeps waiting rather than return.
    fn wait_while(&mut self, pending: impl Fn(&Self) -> bool) {
        while pending(self) {
            if self.ring.submit_and_wait(1).is_err() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            while self.next_completion().is_some() {}
        }
    }

    /// Waits for at least one read-ahead completion and records what completed; only while
    /// none of the batch's own reads is in flight (their completions would be dropped).
    fn wait_for_ahead(&mut self) -> Result<()> {
        debug_assert_eq!(self.in_flight, 0);
        self.submit_and_wait(1)?;
        while self.next_completion().is_some() {}
        Ok(())
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        self.wait_all();
    }
}

impl Drop for Ring {
    /// Waits for the read-ahead still in flight: the kernel writes into the ring's
    /// read-ahead areas until then, and the bounce buffer goes with the ring.
    fn drop(&mut self) {
        Drain::new(&mut self.ring, &mut self.ahead).wait_while(|d| d.ahead.in_flight() > 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(file: u32, offset: u64, len: usize, dest: usize) -> ReadReq {
        ReadReq { file, offset, len, dest }
    }

    #[test]
    fn pieces_group_requests_sharing_blocks_and_stop_at_file_end() {
        // 100..110 and 4000..4200 share blocks; 9000..9050 starts in the block right after
        // them, so all three are one read; the request at 20000 is separate, and the read of
        // the last block of file 0 is only needed up to the end of its request.
        let ops = [
            req(0, 100, 10, 0),
            req(0, 4000, 200, 10),
            req(0, 9000, 50, 210),
            req(0, 20000, 30, 260),
            req(1, 0, 5, 290),
        ];
        let mut pieces = Vec::new();
        plan_pieces(&ops, &[20030, 5], 4096, 1 << 20, &mut pieces);
        let summary: Vec<_> =
            pieces.iter().map(|p| (p.file, p.offset, p.len, p.needed, p.first, p.end)).collect();
        assert_eq!(
            summary,
            vec![
                (0, 0, 12288, 9050, 0, 3),
                (0, 16384, 4096, 20030 - 16384, 3, 4),
                (1, 0, 4096, 5, 4, 5)
            ]
        );
    }

    #[test]
    fn big_groups_are_cut_into_pieces() {
        let ops = [req(0, 10, 20_000, 0)];
        let mut pieces = Vec::new();
        plan_pieces(&ops, &[1 << 20], 4096, 8192, &mut pieces);
        let lens: Vec<_> = pieces.iter().map(|p| (p.offset, p.len, p.needed)).collect();
        assert_eq!(lens, vec![(0, 8192, 8192), (8192, 8192, 8192), (16384, 4096, 20010 - 16384)]);
    }
}
