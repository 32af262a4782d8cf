"""Drop-in reader classes of the reference packages, backed by reel.

Change ``import ffrecord`` to ``from reel.compat import ffrecord`` (likewise ``granular``,
``gulpio2``, ``syrah``) and the calls listed in the README's "One-import migration" table
keep working, returning what the reference returns, read by reel (batched reads with the
GIL released, checksums verified, hostile files refused with ``reel.ReelError``s instead of
crashes or garbage).
"""

__all__ = ["ffrecord", "granular", "gulpio2", "syrah"]
