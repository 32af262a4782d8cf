#!/usr/bin/env python3
"""Damaged-JPEG sweep: does reel reject exactly the frames the reference rejects?

Generates valid JPEGs (simplejpeg, as gulpio2 writes frames, plus Pillow for restart
markers, 4:2:2, progressive scans and optimised Huffman tables), damages each in one way per
variant, judges every variant with the reference's decoder (simplejpeg 1.9.0, called as
gulpio2's `jpeg_bytes_to_img` calls it) and with reel (the `jpeg_judge` example), and
prints the confusion matrix, per damage class, and every disagreement.

    python3 -m venv /tmp/jpeg-sweep && /tmp/jpeg-sweep/bin/pip install simplejpeg==1.9.0 numpy pillow==13.0.0
    cargo build --release -p reel-gulp --example jpeg_judge
    /tmp/jpeg-sweep/bin/python crates/reel-gulp/tools/jpeg_sweep.py \\
        --judge target/release/examples/jpeg_judge --out /tmp/jpeg-sweep-frames

Everything is seeded (--seed), so a run reproduces the same frames.
"""

import argparse
import io
import os
import random
import subprocess
import sys
from collections import Counter, defaultdict

import numpy as np
import simplejpeg
from PIL import Image


def image(rng, h, w, gray):
    """A smooth gradient with texture and noise: entropy data like a video frame's."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    chans = 1 if gray else 3
    out = np.empty((h, w, chans))
    for c in range(chans):
        fx, fy, ph = rng.uniform(0.02, 0.3), rng.uniform(0.02, 0.3), rng.uniform(0, 6.3)
        base = 128 + 60 * np.sin(fx * x + ph) * np.cos(fy * y) + 40 * (x / w - y / h)
        out[..., c] = base + np.asarray([rng.gauss(0, 12) for _ in range(h * w)]).reshape(h, w)
    out = np.clip(out, 0, 255).astype(np.uint8)
    return out[..., 0] if gray else out


def bases(rng):
    """(name, jpeg bytes) of the valid frames the damage is applied to."""
    out = []
    for (h, w) in [(48, 64), (29, 37), (96, 128)]:
        rgb = image(rng, h, w, False)
        gray = image(rng, h, w, True)
        out.append((f"sj444_{w}x{h}", simplejpeg.encode_jpeg(rgb, quality=90, colorspace="RGB",
                                                             colorsubsampling="444")))
        out.append((f"sj420_{w}x{h}", simplejpeg.encode_jpeg(rgb, quality=90, colorspace="RGB",
                                                             colorsubsampling="420")))
        out.append((f"sjgray_{w}x{h}", simplejpeg.encode_jpeg(gray[..., None], quality=90,
                                                              colorspace="GRAY")))
        for tag, kw in [("rst", {"restart_marker_blocks": 3}), ("prog", {"progressive": True}),
                        ("opt", {"optimize": True}),
                        ("rst422", {"restart_marker_rows": 1, "subsampling": 1}),
                        ("prog420", {"progressive": True, "subsampling": 2}),
                        ("progrst", {"progressive": True, "restart_marker_blocks": 2})]:
            buf = io.BytesIO()
            kw.setdefault("subsampling", 0)
            Image.fromarray(rgb).save(buf, "JPEG", quality=90, **kw)
            out.append((f"pil{tag}_{w}x{h}", buf.getvalue()))
        buf = io.BytesIO()
        Image.fromarray(gray).save(buf, "JPEG", quality=75, progressive=True)
        out.append((f"pilproggray_{w}x{h}", buf.getvalue()))
    return out


def segments(jpeg):
    """Marker segments: (marker, start of FF, end) for header segments, entropy-coded
    ranges as ("ecs", start, end), restart markers as ("rst", at, at + 2)."""
    segs = []
    i = 2
    n = len(jpeg)
    while i + 4 <= n:
        if jpeg[i] != 0xFF:
            break
        m = jpeg[i + 1]
        if m == 0xD9:
            segs.append((m, i, i + 2))
            break
        length = (jpeg[i + 2] << 8) | jpeg[i + 3]
        segs.append((m, i, i + 2 + length))
        i += 2 + length
        if m == 0xDA:
            start = i
            while i + 1 < n:
                if jpeg[i] == 0xFF and jpeg[i + 1] != 0 and not 0xD0 <= jpeg[i + 1] <= 0xD7:
                    break
                if jpeg[i] == 0xFF and 0xD0 <= jpeg[i + 1] <= 0xD7:
                    segs.append(("rst", i, i + 2))
                    i += 2
                    continue
                i += 1
            segs.append(("ecs", start, i))
    return segs


def ecs_ranges(segs):
    return [(a, b) for (m, a, b) in segs if m == "ecs" and b > a]


def pick_ecs_pos(rng, segs):
    ranges = ecs_ranges(segs)
    a, b = rng.choice(ranges)
    return rng.randrange(a, b)


def junk(rng, k):
    avoid_ff = rng.random() < 0.5
    return bytes(rng.randrange(0, 255 if avoid_ff else 256) for _ in range(k))


def damage(rng, cls, jpeg):
    """One damaged variant of `jpeg` of class `cls`, or None if the class does not apply."""
    b = bytearray(jpeg)
    segs = segments(jpeg)
    eoi = next((a for (m, a, _) in segs if m == 0xD9), None)
    if cls == "bitflip_ecs":
        p = pick_ecs_pos(rng, segs)
        b[p] ^= 1 << rng.randrange(8)
    elif cls == "byte_ecs":
        p = pick_ecs_pos(rng, segs)
        b[p] = (b[p] + rng.randrange(1, 256)) % 256
    elif cls in ("insert_before_marker", "remove_before_marker"):
        # Mostly the end-of-image marker (the scan's end), else any other marker.
        markers = [(m, a) for (m, a, _) in segs if m not in ("ecs",)]
        if rng.random() < 0.5 and eoi is not None:
            at = eoi
        else:
            at = rng.choice(markers)[1]
        k = rng.choice([1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 33, 64])
        if cls == "insert_before_marker":
            b[at:at] = junk(rng, k)
        else:
            k = min(k, at - 2)
            del b[at - k:at]
    elif cls == "truncate_scan":
        a, e = rng.choice(ecs_ranges(segs))
        del b[rng.randrange(a, e):]
    elif cls == "truncate_keep_eoi":
        a, e = ecs_ranges(segs)[-1]
        k = rng.choice([1, 2, 3, 5, 8, 13, 40, 100])
        k = min(k, e - a)
        del b[e - k:e]
    elif cls == "header":
        # Frame, scan, restart-interval and JFIF headers: a byte flipped or replaced.
        cands = [(a, e) for (m, a, e) in segs if m in (0xC0, 0xC1, 0xC2, 0xDA, 0xDD, 0xE0)]
        a, e = rng.choice(cands)
        p = rng.randrange(a + 1, e)
        b[p] = rng.randrange(256) if rng.random() < 0.5 else b[p] ^ (1 << rng.randrange(8))
    elif cls in ("dht", "dqt"):
        want = 0xC4 if cls == "dht" else 0xDB
        cands = [(a, e) for (m, a, e) in segs if m == want]
        if not cands:
            return None
        a, e = rng.choice(cands)
        p = rng.randrange(a + 2, e)  # length, table ids, counts or values
        if rng.random() < 0.5:
            b[p] ^= 1 << rng.randrange(8)
        else:
            b[p] = rng.randrange(256)
    else:
        raise ValueError(cls)
    return bytes(b)


CLASSES = ["bitflip_ecs", "byte_ecs", "insert_before_marker", "remove_before_marker",
           "truncate_scan", "truncate_keep_eoi", "dht", "dqt", "header"]


def reference(jpeg):
    """gulpio2's jpeg_bytes_to_img with simplejpeg 1.9.0: (accepted, why)."""
    try:
        colorspace = simplejpeg.decode_jpeg_header(jpeg)[2]
        target = "RGB" if colorspace == "YCbCr" else colorspace
        simplejpeg.decode_jpeg(jpeg, colorspace=target, fastdct=True, fastupsample=True)
        return True, ""
    except Exception as e:  # noqa: BLE001 - any failure is a rejection
        return False, f"{type(e).__name__}: {e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", required=True, help="path of reel's jpeg_judge example binary")
    ap.add_argument("--out", required=True, help="directory for the generated frames")
    ap.add_argument("--per-class", type=int, default=80, help="variants per damage class")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--lenient", action="store_true", help="judge reel's lenient decode instead")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    for f in os.listdir(args.out):
        if f.endswith(".jpg"):
            os.remove(os.path.join(args.out, f))
    base = bases(rng)
    ref = {}
    meta = {}
    idx = 0
    for name, jpeg in base:
        ok, why = reference(jpeg)
        assert ok, f"base frame {name} does not decode with the reference: {why}"
    for cls in CLASSES:
        made = 0
        attempts = 0
        while made < args.per_class and attempts < args.per_class * 20:
            attempts += 1
            bname, jpeg = base[rng.randrange(len(base))]
            d = damage(rng, cls, jpeg)
            if d is None or d == jpeg:
                continue
            fname = f"{idx:05d}_{cls}_{bname}.jpg"
            with open(os.path.join(args.out, fname), "wb") as f:
                f.write(d)
            ref[fname] = reference(d)
            meta[fname] = cls
            idx += 1
            made += 1
    cmd = [args.judge] + (["--lenient"] if args.lenient else []) + [args.out]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    reel = {}
    for line in out.splitlines():
        parts = line.split("\t")
        reel[parts[0]] = (parts[1] == "accept", parts[2] if len(parts) > 2 else "")
    missing = set(ref) - set(reel)
    assert not missing, f"reel gave no verdict for {sorted(missing)[:5]}"

    total = Counter()
    per_class = defaultdict(Counter)
    disagreements = []
    for fname, (r_ok, r_why) in sorted(ref.items()):
        l_ok, l_why = reel[fname]
        key = ("ref accept" if r_ok else "ref reject", "reel accept" if l_ok else "reel reject")
        total[key] += 1
        per_class[meta[fname]][key] += 1
        if r_ok != l_ok:
            disagreements.append((fname, r_why or "accepted", l_why or "accepted"))

    def row(c):
        return (f"ref accept: reel accept {c[('ref accept', 'reel accept')]:4d}  reel reject "
                f"{c[('ref accept', 'reel reject')]:4d} | ref reject: reel accept "
                f"{c[('ref reject', 'reel accept')]:4d}  reel reject {c[('ref reject', 'reel reject')]:4d}")

    print(f"{len(ref)} damaged frames from {len(base)} valid ones (seed {args.seed})")
    print()
    print("                      reel accept   reel reject")
    print(f"reference accept      {total[('ref accept', 'reel accept')]:11d}   {total[('ref accept', 'reel reject')]:11d}")
    print(f"reference reject      {total[('ref reject', 'reel accept')]:11d}   {total[('ref reject', 'reel reject')]:11d}")
    print()
    for cls in CLASSES:
        print(f"{cls:22s} {row(per_class[cls])}")
    print()
    for fname, r_why, l_why in disagreements:
        print(f"DISAGREE {fname}\n  reference: {r_why}\n  reel:      {l_why}")
    accepted = total[("ref accept", "reel accept")] + total[("ref accept", "reel reject")]
    missed = total[("ref reject", "reel accept")]
    rate = total[("ref accept", "reel accept")] / accepted if accepted else 1.0
    print()
    print(f"reference rejects reel accepts: {missed} (target 0); "
          f"reel accepts {rate:.2%} of what the reference accepts (target >= 99%)")
    return 0 if missed == 0 and rate >= 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
