"""The near-clone index (issue 34): a stored signature per submission, so that a similarity search reads a few rows
instead of tokenising every kernel of the problem.

``leaderboards/similarity.py`` stays the truth: a file's fingerprint is the set of its shingle hashes and two files'
similarity the Jaccard index of those sets. This module stores, for every submission when it is stored:

- ``similarity_signatures``: the fingerprint itself (its 8-byte hashes, sorted, concatenated), so that the exact
  Jaccard of a candidate is two set operations, no tokenising;
- ``similarity_bands``: its MinHash (``PERMUTATIONS`` minima of the shingle hashes under as many fixed 64-bit mixes)
  cut into ``BANDS`` bands of ``ROWS`` values, one row per band: (problem, band, bucket), ``bucket`` a hash of the
  band's values. Two files share a band's bucket with probability ``1 - (1 - J**ROWS)**BANDS`` for Jaccard ``J``:
  1 - 1e-10 at ``NEAR`` (0.8), 0.986 at 0.5, 0.58 at 0.3, 0.1 at 0.15: two honest solutions (0.1 or less) rarely
  meet in a bucket, so a bucket holds few submissions even with tens of thousands per problem.

A search fingerprints the query, looks its ``BANDS`` buckets up (an index on (problem, band, bucket)), ranks the
submissions found by how many bands they share (the MinHash estimate of their similarity, squared), and computes
the exact Jaccard of the best ``candidates`` from their stored fingerprints. A problem with at most ``EXACT_SCAN``
indexed submissions is compared exactly with all of them instead (still no tokenising): small boards get exactly
the answers of a full scan, large ones the kernels that share a band, which every kernel at ``NEAR`` or above does.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import BigInteger, Integer, and_, column, delete, func, select, tuple_, values
from sqlalchemy.orm import Session, aliased

from leaderboards.models import SimilarityBand, SimilaritySignature
from leaderboards.similarity import fingerprint, similarity

BANDS = 32
ROWS = 3
PERMUTATIONS = BANDS * ROWS
EXACT_SCAN = 50
"""A problem with at most this many indexed submissions is compared exactly with every one of them."""
NEAR_MIN_BANDS = 4
"""Bands a pair at ``NEAR`` (0.8) shares: about 16 of 32 (binomial, p = 0.8 ** 3 = 0.51); fewer than 4 has
probability 7e-7. A near-copy check reads only pairs sharing at least this many."""

_SEEDS = np.array(
    [int.from_bytes(hashlib.blake2b(f"kernelcup-minhash-{i}".encode(), digest_size=8).digest(), "big")
     for i in range(PERMUTATIONS)],
    dtype=np.uint64,
)  # fmt: skip
_EMPTY = np.full(PERMUTATIONS, np.iinfo(np.uint64).max, dtype=np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of 64-bit words that scatters every input bit (wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def pack(print_: frozenset[bytes]) -> bytes:
    """A fingerprint as stored: its 8-byte hashes, sorted, concatenated."""
    return b"".join(sorted(print_))


def unpack(blob: bytes) -> frozenset[bytes]:
    return frozenset(blob[i : i + 8] for i in range(0, len(blob), 8))


def minhash(print_: frozenset[bytes]) -> np.ndarray:
    """The ``PERMUTATIONS`` minima of the fingerprint's hashes under fixed mixes (equal positions estimate the
    Jaccard index of two fingerprints)."""
    if not print_:
        return _EMPTY
    values = np.frombuffer(pack(print_), dtype=">u8").astype(np.uint64)
    return _mix(values[:, None] ^ _SEEDS[None, :]).min(axis=0)


def buckets(print_: frozenset[bytes]) -> list[int]:
    """One signed 64-bit bucket per band (an empty fingerprint has none: it is near nothing)."""
    if not print_:
        return []
    signature = minhash(print_).astype(">u8").tobytes()
    width = 8 * ROWS
    return [
        int.from_bytes(hashlib.blake2b(signature[b * width : (b + 1) * width], digest_size=8).digest(), "big",
                       signed=True)
        for b in range(BANDS)
    ]  # fmt: skip


_PREPARED: OrderedDict[tuple[bytes, bool], frozenset[bytes]] = OrderedDict()
_PREPARED_LOCK = threading.Lock()
PREPARED_MAX = 256
"""Fingerprints made ahead of storing (``prepare``), newest last: a batch's 64 candidates fit."""


def _key(code: bytes, file_name: str) -> tuple[bytes, bool]:
    """What a fingerprint depends on: the code, and whether the name picks Python's tokenizer (``similarity``)."""
    return hashlib.sha256(code).digest(), file_name.endswith(".py")


def prepare(code: bytes, file_name: str) -> None:
    """Fingerprint a file before the transaction that stores it (the service calls it with the file's first checks):
    tokenising a 1 MiB file takes about a second, which ``index_submission`` would otherwise spend inside the
    transaction, holding the leaderboard's row lock (a batch of 64 such files: a minute)."""
    key = _key(code, file_name)
    with _PREPARED_LOCK:
        if key in _PREPARED:
            _PREPARED.move_to_end(key)
            return
    print_ = fingerprint(code.decode("utf-8", errors="replace"), file_name)
    with _PREPARED_LOCK:
        _PREPARED[key] = print_
        while len(_PREPARED) > PREPARED_MAX:
            _PREPARED.popitem(last=False)


def _fingerprint_of(code: bytes, file_name: str) -> frozenset[bytes]:
    """The prepared fingerprint of the file, else one made now."""
    with _PREPARED_LOCK:
        print_ = _PREPARED.get(_key(code, file_name))
    return print_ if print_ is not None else fingerprint(code.decode("utf-8", errors="replace"), file_name)


def index_submission(s: Session, submission_id: int, problem: str, code: bytes, file_name: str) -> None:
    """Store (or replace) one submission's signature and bands."""
    print_ = _fingerprint_of(code, file_name)
    s.execute(delete(SimilarityBand).where(SimilarityBand.submission_id == submission_id))
    s.execute(delete(SimilaritySignature).where(SimilaritySignature.submission_id == submission_id))
    s.add(SimilaritySignature(submission_id=submission_id, problem=problem, shingles=pack(print_)))
    s.add_all(
        SimilarityBand(submission_id=submission_id, problem=problem, band=b, bucket=bucket)
        for b, bucket in enumerate(buckets(print_))
    )


@dataclass(frozen=True)
class Match:
    """An indexed submission near the query: its exact Jaccard index (``leaderboards.similarity.similarity``)."""

    submission_id: int
    similarity: float


def _exact(s: Session, target: frozenset[bytes], ids: Iterable[int]) -> list[Match]:
    return [Match(sid, similarity(target, print_)) for sid, print_ in signatures(s, ids).items()]


def search(
    s: Session, problem: str, target: frozenset[bytes], *, candidates: int = 40, min_bands: int = 1
) -> list[Match]:
    """The indexed submissions of ``problem`` near ``target`` with their exact similarity, most similar first (ties
    by id, newest first), sharing something (similarity above 0). With more than ``EXACT_SCAN`` indexed submissions:
    only the ``candidates`` sharing the most bands (at least ``min_bands``) are compared."""
    if not target:
        return []
    few: Sequence[int] = s.scalars(  # at most EXACT_SCAN + 1 ids: never a count of a large problem's kernels
        select(SimilaritySignature.submission_id).where(SimilaritySignature.problem == problem).limit(EXACT_SCAN + 1)
    ).all()
    if len(few) <= EXACT_SCAN:
        ids = few
    else:
        keys = [(b, bucket) for b, bucket in enumerate(buckets(target))]
        shared = func.count().label("shared")
        lookup = select(SimilarityBand.submission_id).where(SimilarityBand.problem == problem)
        if s.get_bind().dialect.name == "postgresql":  # a join to the keys: one index-only probe per band
            wanted = values(column("band", Integer()), column("bucket", BigInteger()), name="wanted").data(keys)
            lookup = lookup.join(
                wanted, and_(SimilarityBand.band == wanted.c.band, SimilarityBand.bucket == wanted.c.bucket)
            )
        else:  # a row-value IN (which PostgreSQL plans as a bitmap OR of 32 scans reading the table: 4 to 15 ms)
            lookup = lookup.where(tuple_(SimilarityBand.band, SimilarityBand.bucket).in_(keys))
        ids = s.scalars(  # at most `candidates` rows
            lookup.group_by(SimilarityBand.submission_id)
            .having(shared >= min_bands)
            .order_by(shared.desc(), SimilarityBand.submission_id.desc())
            .limit(candidates)
        ).all()
    found = [m for m in _exact(s, target, ids) if m.similarity > 0]
    found.sort(key=lambda m: (-m.similarity, -m.submission_id))
    return found


def signature_of(s: Session, submission_id: int) -> frozenset[bytes] | None:
    """A submission's stored fingerprint; None where it was never indexed."""
    blob = s.scalar(select(SimilaritySignature.shingles).where(SimilaritySignature.submission_id == submission_id))
    return None if blob is None else unpack(blob)


def signatures(s: Session, ids: Iterable[int]) -> dict[int, frozenset[bytes]]:
    """The stored fingerprints of ``ids`` (those indexed)."""
    ids = list(ids)
    if not ids:
        return {}
    rows = s.execute(
        select(SimilaritySignature.submission_id, SimilaritySignature.shingles).where(
            SimilaritySignature.submission_id.in_(ids)
        )
    )
    return {sid: unpack(blob) for sid, blob in rows}


def near_pairs(s: Session, ids: Iterable[int], *, min_bands: int = NEAR_MIN_BANDS) -> dict[int, list[int]]:
    """For each of ``ids``, the other indexed submissions of its problem sharing at least ``min_bands`` bands with
    it: the candidates for a near copy (every pair at ``NEAR`` or above is among them, but for about 7e-7)."""
    ids = list(ids)
    if not ids:
        return {}
    mine, theirs = aliased(SimilarityBand), aliased(SimilarityBand)
    rows = s.execute(
        select(mine.submission_id, theirs.submission_id)
        .join(
            theirs,
            and_(
                theirs.problem == mine.problem,
                theirs.band == mine.band,
                theirs.bucket == mine.bucket,
                theirs.submission_id != mine.submission_id,
            ),
        )
        .where(mine.submission_id.in_(ids))
        .group_by(mine.submission_id, theirs.submission_id)
        .having(func.count() >= min_bands)
    )
    pairs: dict[int, list[int]] = {}
    for a, b in rows:
        pairs.setdefault(a, []).append(b)
    return pairs
