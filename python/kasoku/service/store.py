"""What the service keeps across restarts: clients (hashed tokens), key sets, models (kasoku.nn plans), accepted jobs
and their results, multiparty sessions and the key shares their parties sent.

SQLite (WAL, synchronous=FULL) holds the rows; request, key and result bytes are files written to a temporary name,
fsync'ed and renamed before the row that points at them commits. A job is accepted (202) only after its row and
request file are durable, so a restart finds every accepted job: finished ones with their result, the others to run
again (kasoku's operations are deterministic, so a job that ran before the restart gives the same bytes again).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
import threading
import time
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS clients (id TEXT PRIMARY KEY, token_sha256 TEXT UNIQUE NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS keys (id TEXT PRIMARY KEY, client TEXT NOT NULL, bytes INTEGER NOT NULL,
                                 relin INTEGER NOT NULL, galois TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, client TEXT NOT NULL, keys TEXT NOT NULL,
                                 state TEXT NOT NULL, submitted REAL NOT NULL, finished REAL, error TEXT,
                                 request_bytes INTEGER NOT NULL, result_bytes INTEGER, runs INTEGER NOT NULL DEFAULT 0,
                                 idempotency_key TEXT);
CREATE TABLE IF NOT EXISTS models (id TEXT PRIMARY KEY, client TEXT NOT NULL, bytes INTEGER NOT NULL,
                                   created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS mp_sessions (id TEXT PRIMARY KEY, client TEXT NOT NULL, crs BLOB NOT NULL,
                                        parties INTEGER NOT NULL, threshold INTEGER NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS mp_shares (session TEXT NOT NULL, step TEXT NOT NULL, tag INTEGER NOT NULL,
                                      party INTEGER NOT NULL, bytes INTEGER NOT NULL,
                                      PRIMARY KEY (session, step, tag, party));
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_idem ON jobs(client, idempotency_key);
"""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Store:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        for d in ("keys", "jobs", "models", "multiparty"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.root / "kasoku.db", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _q(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # --- clients ---
    def add_client(self) -> tuple[str, str]:
        cid, token = "c" + secrets.token_hex(8), secrets.token_urlsafe(32)
        self._q("INSERT INTO clients VALUES (?, ?, ?)", (cid, token_hash(token), time.time()))
        return cid, token

    def client_of(self, token: str) -> str | None:
        rows = self._q("SELECT id FROM clients WHERE token_sha256 = ?", (token_hash(token),))
        return rows[0][0] if rows else None

    # --- key sets ---
    def key_path(self, kid: str) -> Path:
        return self.root / "keys" / f"{kid}.bin"

    def add_keys(self, client: str, data: bytes, relin: bool, galois: list[int]) -> str:
        kid = "k" + secrets.token_hex(8)
        _write(self.key_path(kid), data)
        self._q(
            "INSERT INTO keys VALUES (?, ?, ?, ?, ?, ?)",
            (kid, client, len(data), int(relin), ",".join(map(str, galois)), time.time()),
        )
        return kid

    def keys_of(self, client: str, kid: str) -> dict | None:
        """The key set's record, if it is this client's."""
        rows = self._q("SELECT bytes, relin, galois FROM keys WHERE id = ? AND client = ?", (kid, client))
        if not rows:
            return None
        b, r, g = rows[0]
        return {"keys": kid, "bytes": b, "relin": bool(r), "galois_elements": [int(x) for x in g.split(",") if x]}

    # --- models (kasoku.nn plans, Plan.to_bytes) ---
    def model_path(self, mid: str) -> Path:
        return self.root / "models" / f"{mid}.plan"

    def add_model(self, client: str, data: bytes) -> str:
        mid = "m" + secrets.token_hex(8)
        _write(self.model_path(mid), data)
        self._q("INSERT INTO models VALUES (?, ?, ?, ?)", (mid, client, len(data), time.time()))
        return mid

    def model_of(self, client: str, mid: str) -> dict | None:
        """The model's record, if it is this client's."""
        rows = self._q("SELECT bytes, created FROM models WHERE id = ? AND client = ?", (mid, client))
        return {"model": mid, "bytes": rows[0][0], "created": rows[0][1]} if rows else None

    # --- multiparty sessions (kasoku.multiparty): the CRS and the parties' public key shares ---
    def add_mp_session(self, client: str, crs: bytes, parties: int, threshold: int) -> str:
        sid = "s" + secrets.token_hex(16)  # unguessable: the parties (other clients) name it to take part
        self._q(
            "INSERT INTO mp_sessions VALUES (?, ?, ?, ?, ?, ?)", (sid, client, crs, parties, threshold, time.time())
        )
        return sid

    def mp_session(self, sid: str) -> dict | None:
        rows = self._q("SELECT crs, parties, threshold FROM mp_sessions WHERE id = ?", (sid,))
        return {"session": sid, "crs": rows[0][0], "parties": rows[0][1], "threshold": rows[0][2]} if rows else None

    def mp_share_path(self, sid: str, step: str, tag: int, party: int) -> Path:
        return self.root / "multiparty" / f"{sid}-{step}-{tag}-{party}.share"

    def add_mp_share(self, sid: str, step: str, tag: int, party: int, data: bytes) -> bool:
        """Keeps a party's share of a step (False: that party already sent it)."""
        if self._q(
            "SELECT 1 FROM mp_shares WHERE session = ? AND step = ? AND tag = ? AND party = ?", (sid, step, tag, party)
        ):
            return False
        _write(self.mp_share_path(sid, step, tag, party), data)
        try:
            self._q("INSERT INTO mp_shares VALUES (?, ?, ?, ?, ?)", (sid, step, tag, party, len(data)))
        except sqlite3.IntegrityError:
            return False
        return True

    def mp_shares(self, sid: str) -> list[tuple[str, int, int]]:
        """(step, tag, party) of every share the session holds."""
        return [tuple(r) for r in self._q("SELECT step, tag, party FROM mp_shares WHERE session = ?", (sid,))]

    # --- jobs ---
    def request_path(self, jid: int) -> Path:
        return self.root / "jobs" / f"{jid}.req"

    def result_path(self, jid: int) -> Path:
        return self.root / "jobs" / f"{jid}.out"

    def job_with_key(self, client: str, key: str) -> int | None:
        """The accepted job this client submitted with this idempotency key, if any."""
        rows = self._q("SELECT id FROM jobs WHERE client = ? AND idempotency_key = ? AND state != 'new'", (client, key))
        return int(rows[0][0]) if rows else None

    def accept(self, client: str, kid: str, body: bytes, key: str | None = None) -> int:
        """Makes the job durable; returns its id."""
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO jobs (client, keys, state, submitted, request_bytes, idempotency_key) "
                "VALUES (?, ?, 'new', ?, ?, ?)",
                (client, kid, time.time(), len(body), key),
            )
            jid = int(cur.lastrowid)
        _write(self.request_path(jid), body)
        self._q("UPDATE jobs SET state = 'queued', runs = 1 WHERE id = ?", (jid,))
        return jid

    def discard(self, jid: int) -> None:
        """A job refused after accept() (its inputs did not check): as if it never came."""
        self.request_path(jid).unlink(missing_ok=True)
        self._q("DELETE FROM jobs WHERE id = ?", (jid,))

    def rerun(self, jid: int) -> None:
        """The job is queued again after a restart."""
        self._q("UPDATE jobs SET runs = runs + 1 WHERE id = ?", (jid,))

    def finish(self, jid: int, result: bytes | None, error: str | None) -> float | None:
        """Records a job's end once; returns its latency (s) from acceptance, or None if it had already ended."""
        if result is not None:
            _write(self.result_path(jid), result)
        now = time.time()
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET state = ?, finished = ?, error = ?, result_bytes = ? "
                "WHERE id = ? AND state = 'queued'",
                ("done" if error is None else "failed", now, error, None if result is None else len(result), jid),
            )
            if cur.rowcount != 1:
                return None
            (sub,) = self._db.execute("SELECT submitted FROM jobs WHERE id = ?", (jid,)).fetchone()
        self.request_path(jid).unlink(missing_ok=True)
        return now - sub

    def job(self, client: str, jid: int) -> dict | None:
        """The job's record, if it is this client's."""
        rows = self._q(
            "SELECT state, submitted, finished, error, request_bytes, result_bytes, runs FROM jobs "
            "WHERE id = ? AND client = ?",
            (jid, client),
        )
        if not rows or rows[0][0] == "new":
            return None
        st, sub, fin, err, rq, rs, runs = rows[0]
        return {
            "job": jid,
            "status": st,
            "submitted": sub,
            "finished": fin,
            "error": err,
            "request_bytes": rq,
            "result_bytes": rs,
            "runs": runs,
        }

    def result(self, jid: int) -> bytes:
        return self.result_path(jid).read_bytes()

    def delete(self, client: str, jid: int) -> bool:
        with self._lock:
            cur = self._db.execute("DELETE FROM jobs WHERE id = ? AND client = ? AND state != 'queued'", (jid, client))
        if cur.rowcount != 1:
            return False
        self.result_path(jid).unlink(missing_ok=True)
        return True

    def unfinished(self) -> list[tuple[int, str, str]]:
        """(id, client, keys) of the accepted jobs without an end, oldest first; jobs whose request never became
        durable ('new') are dropped (their client got no answer)."""
        for (jid,) in self._q("SELECT id FROM jobs WHERE state = 'new'"):
            self.discard(jid)
        return [
            (int(a), b, c)
            for a, b, c in self._q("SELECT id, client, keys FROM jobs WHERE state = 'queued' ORDER BY id")
        ]

    def counts(self) -> dict[str, int]:
        return {s: n for s, n in self._q("SELECT state, COUNT(*) FROM jobs GROUP BY state")}
