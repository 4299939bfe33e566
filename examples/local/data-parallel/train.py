#!/usr/bin/env python3
"""Data-parallel linear regression with nothing but the Python standard library.

One copy of this program runs per node, with the PET_* variables the
torch-distributed runtime gives every node (the ones torchrun reads):
PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and
PET_MASTER_PORT. It then does what torchrun would do: it starts
PET_NPROC_PER_NODE worker processes, each with RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT, and waits for them (if one fails, the others
are stopped and the node exits with the failing worker's code).

The workers train one linear model together. Rank 0 listens on
MASTER_ADDR:MASTER_PORT; every other rank connects to it (retrying while rank
0 is still starting) and sends its rank. Each step, every rank computes the
gradient of the mean squared error on a mini-batch of its own shard of a
synthetic data set and the ranks average their gradients through rank 0 (a
star all-reduce: everyone sends, rank 0 sums and sends the mean back), so all
ranks apply the same update and keep identical weights.

Rank 0 prints the loss after every epoch and the final weights, reports
progress to the file named by KFTRAINER_STATUS_FILE (when set), and exits
non-zero unless the final loss is below --max-loss. Every socket operation
has a timeout, so a lost peer ends the job instead of hanging it.
"""
import argparse
import datetime
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import time

TRUE_WEIGHTS = [2.0, -3.0, 0.5, 1.5]
TRUE_BIAS = 0.25
NOISE = 0.05
SEED = 20240601


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=int(os.environ.get("EPOCHS", "20")))
    p.add_argument("--samples", type=int, default=4096, help="samples in the whole data set")
    p.add_argument("--batch", type=int, default=32, help="mini-batch size per rank")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--max-loss", type=float, default=0.01,
                   help="fail unless the final loss is below this")
    p.add_argument("--epoch-delay", type=float,
                   default=float(os.environ.get("EPOCH_DELAY", "0")),
                   help="seconds to pause after each epoch (to watch progress)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds to wait for peers before giving up")
    return p.parse_args()


def log(msg):
    print(msg, flush=True)


# --- the launcher (one per node) -----------------------------------------------------------

def node_env():
    """The node's place in the job, from the PET_* variables (defaults: one node alone)."""
    nnodes = int(os.environ.get("PET_NNODES", "1"))
    nproc = os.environ.get("PET_NPROC_PER_NODE", "1")
    # torch's plugin sends "auto" when the job does not say; one per CPU, as torchrun does.
    nproc = (os.cpu_count() or 1) if nproc == "auto" else int(nproc)
    node_rank = int(os.environ.get("PET_NODE_RANK", "0"))
    addr = os.environ.get("PET_MASTER_ADDR", "127.0.0.1")
    port = int(os.environ.get("PET_MASTER_PORT", "29500"))
    if not (nnodes >= 1 and nproc >= 1 and 0 <= node_rank < nnodes and 0 < port < 65536):
        raise SystemExit(f"bad PET_* environment: nnodes={nnodes} nproc={nproc} "
                         f"node_rank={node_rank} port={port}")
    return nnodes, nproc, node_rank, addr, port


def launch(args):
    nnodes, nproc, node_rank, addr, port = node_env()
    world = nnodes * nproc
    procs = []
    for local in range(nproc):
        env = dict(os.environ, RANK=str(node_rank * nproc + local), LOCAL_RANK=str(local),
                   WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(nproc),
                   MASTER_ADDR=addr, MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                                      env=env))

    def stop_all(*_):
        for p in procs:
            if p.poll() is None:
                p.terminate()

    # Stopping the node (SIGTERM from the kubelet or the local supervisor) stops the workers.
    signal.signal(signal.SIGTERM, lambda *a: (stop_all(), sys.exit(143)))
    code = 0
    left = list(procs)
    while left:
        for p in list(left):
            rc = p.poll()
            if rc is None:
                continue
            left.remove(p)
            if rc != 0 and code == 0:
                code = rc if rc > 0 else 128 - rc
                log(f"node {node_rank}: worker {procs.index(p)} exited with {rc}; "
                    "stopping the others")
                stop_all()
        time.sleep(0.05)
    return code


# --- communication (workers) ---------------------------------------------------------------

def send_msg(sock, floats):
    sock.sendall(struct.pack("!I", len(floats)) + struct.pack(f"!{len(floats)}d", *floats))


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        buf += chunk
    return bytes(buf)


def recv_msg(sock, expect):
    (n,) = struct.unpack("!I", recv_exact(sock, 4))
    if n != expect:
        raise ConnectionError(f"message of {n} values, expected {expect}")
    return list(struct.unpack(f"!{n}d", recv_exact(sock, 8 * n)))


class Group:
    """The ranks of the job joined in a star around rank 0."""

    def __init__(self, rank, world, addr, port, timeout):
        self.rank, self.world = rank, world
        self.peers = {}  # rank 0: rank -> socket
        self.sock = None  # other ranks: the socket to rank 0
        if world == 1:
            return
        if rank == 0:
            self._accept(port, timeout)
        else:
            self._connect(addr, port, timeout)

    def _accept(self, port, timeout):
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("", port))
        srv.listen(self.world)
        deadline = time.monotonic() + timeout
        try:
            while len(self.peers) < self.world - 1:
                srv.settimeout(max(deadline - time.monotonic(), 0.01))
                try:
                    conn, _ = srv.accept()
                except socket.timeout:
                    raise SystemExit(f"rank 0: only {len(self.peers) + 1} of {self.world} "
                                     f"ranks joined within {timeout:.0f}s")
                conn.settimeout(timeout)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                (peer,) = struct.unpack("!I", recv_exact(conn, 4))
                if not 0 < peer < self.world or peer in self.peers:
                    conn.close()
                    raise SystemExit(f"rank 0: unexpected rank {peer} joined")
                self.peers[peer] = conn
        finally:
            srv.close()

    def _connect(self, addr, port, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                s = socket.create_connection((addr, port), timeout=5)
                break
            except OSError as e:
                if time.monotonic() > deadline:
                    raise SystemExit(f"rank {self.rank}: cannot reach rank 0 at {addr}:{port}: {e}")
                time.sleep(0.1)
        s.settimeout(timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(struct.pack("!I", self.rank))
        self.sock = s

    def allreduce_mean(self, values):
        """Every rank gets the element-wise mean of all ranks' values."""
        if self.world == 1:
            return list(values)
        if self.rank != 0:
            send_msg(self.sock, values)
            return recv_msg(self.sock, len(values))
        total = list(values)
        for peer in sorted(self.peers):
            for i, v in enumerate(recv_msg(self.peers[peer], len(values))):
                total[i] += v
        mean = [t / self.world for t in total]
        for peer in sorted(self.peers):
            send_msg(self.peers[peer], mean)
        return mean

    def close(self):
        for s in list(self.peers.values()) + ([self.sock] if self.sock else []):
            s.close()


# --- training (workers) --------------------------------------------------------------------

def shard(rank, world, samples):
    """This rank's part of the data set; every rank draws the same set from the fixed seed."""
    rng = random.Random(SEED)
    xs, ys = [], []
    for i in range(samples):
        x = [rng.uniform(-1, 1) for _ in TRUE_WEIGHTS]
        y = sum(w * v for w, v in zip(TRUE_WEIGHTS, x)) + TRUE_BIAS + rng.gauss(0, NOISE)
        if i % world == rank:
            xs.append(x)
            ys.append(y)
    return xs, ys


def gradient(w, b, xs, ys):
    """Gradient of the mean squared error over (xs, ys), and that error, as one vector."""
    gw = [0.0] * len(w)
    gb = loss = 0.0
    for x, y in zip(xs, ys):
        err = sum(wi * xi for wi, xi in zip(w, x)) + b - y
        loss += err * err
        for i, xi in enumerate(x):
            gw[i] += 2 * err * xi
        gb += 2 * err
    n = max(len(xs), 1)
    return [g / n for g in gw] + [gb / n, loss / n]


class Progress:
    """Writes upstream's trainerStatus shape to KFTRAINER_STATUS_FILE, atomically."""

    def __init__(self):
        self.path = os.environ.get("KFTRAINER_STATUS_FILE")
        self.start = time.monotonic()

    def report(self, done, total, loss):
        if not self.path:
            return
        elapsed = time.monotonic() - self.start
        remaining = int(elapsed / done * (total - done)) if done else 0
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        status = {
            "progressPercentage": int(100 * done / total),
            "estimatedRemainingSeconds": remaining,
            "metrics": [{"name": "loss", "value": f"{loss:.6f}"},
                        {"name": "epoch", "value": str(done)}],
            "lastUpdatedTime": now,
        }
        tmp = f"{self.path}.tmp.{os.getpid()}"
        try:
            with open(tmp, "w") as f:
                json.dump(status, f)
            os.replace(tmp, self.path)
        except OSError as e:  # progress is a courtesy; training goes on without it
            log(f"rank 0: cannot write progress to {self.path}: {e}")


def train(args):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    xs, ys = shard(rank, world, args.samples)
    group = Group(rank, world, addr, port, args.timeout)
    if rank == 0:
        log(f"rank 0: {world} ranks joined; {args.samples} samples, {len(xs)} per rank")
    progress = Progress() if rank == 0 else None
    w, b = [0.0] * len(TRUE_WEIGHTS), 0.0
    # Every rank takes the same number of steps, or the all-reduce would wait forever.
    steps = max((len(xs) + args.batch - 1) // args.batch, 1)
    loss = float("inf")
    for epoch in range(1, args.epochs + 1):
        losses = []
        for s in range(steps):
            lo = s * args.batch
            g = group.allreduce_mean(gradient(w, b, xs[lo:lo + args.batch], ys[lo:lo + args.batch]))
            w = [wi - args.lr * gi for wi, gi in zip(w, g)]
            b -= args.lr * g[len(w)]
            losses.append(g[-1])
        # The loss of the finished epoch over the whole data set, averaged across ranks.
        loss = group.allreduce_mean(gradient(w, b, xs, ys))[-1]
        if rank == 0:
            log(f"epoch {epoch}/{args.epochs} loss {loss:.6f}  "
                f"({100 * epoch // args.epochs}% done)")
            progress.report(epoch, args.epochs, loss)
        if args.epoch_delay > 0:
            time.sleep(args.epoch_delay)
    group.close()
    if rank == 0:
        log("weights " + " ".join(f"{v:.4f}" for v in w) + f" bias {b:.4f}")
        log(f"true    " + " ".join(f"{v:.4f}" for v in TRUE_WEIGHTS) + f" bias {TRUE_BIAS:.4f}")
        if not loss < args.max_loss:
            log(f"rank 0: did not converge: final loss {loss:.6f} >= {args.max_loss}")
            return 1
        log(f"converged: final loss {loss:.6f} < {args.max_loss}")
    return 0


def main():
    args = parse_args()
    if "LOCAL_RANK" in os.environ and "RANK" in os.environ:
        return train(args)
    return launch(args)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ConnectionError, socket.timeout, OSError) as e:
        print(f"{os.environ.get('RANK', 'launcher')}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
