#!/usr/bin/env -S NODE_PATH=/usr/share/nodejs node
// lockjepsen exec adapter (docs/protocol.md, version 1): Node's `redis`
// client (node-redis 4.5.1, Debian's node-redis, driven as shipped) with the
// Valkey 9 lock commands: SET NX PX to take, SET IFEQ PX to extend, DELIFEQ
// to release. On a Valkey Cluster (LOCKJEPSEN_CLUSTER_NODES, the nodes as
// seeds) it opens createCluster, which finds the key's shard and follows
// MOVED and ASK; on one server (LOCKJEPSEN_ADDR) createClient.
//
//     lockjepsen client-test --topology cluster examples/node-redis/adapter.js
//     lockjepsen run --topology cluster --scenario baseline --recipe exec:examples/node-redis/adapter.js --fence none
//
// node-redis 4 has no Sentinel client: given only Sentinels, it says so on
// stderr and exits before answering init, and lockjepsen refuses the run.
// Requests are served concurrently (one promise each), answered by id.
'use strict';

// Debian's node-redis installs under /usr/share/nodejs, which a Node.js from
// another source does not search: the first line adds it (NODE_PATH).
const redis = require('redis');
const readline = require('readline');

const opTimeout = Number(process.env.LOCKJEPSEN_OP_TIMEOUT_MS || '1000');
const url = (addr) => 'redis://' + addr;
const seeds = (process.env.LOCKJEPSEN_CLUSTER_NODES || '').split(',').filter(Boolean);
const cluster = seeds.length > 0;
if (!cluster && !process.env.LOCKJEPSEN_ADDR) {
  process.stderr.write('node-redis adapter: node-redis 4 has no Sentinel client; it runs where lockjepsen sets ' +
    'LOCKJEPSEN_CLUSTER_NODES (--topology cluster) or LOCKJEPSEN_ADDR (--topology standalone)\n');
  process.exit(2);
}

// disableOfflineQueue: a command for a node whose connection is down fails at
// once (nothing sent) instead of waiting to be sent later, after lockjepsen
// has recorded it as unknown.
//
// A socket that cannot connect is retried for ever by default, and
// createCluster asks its seeds in order: with the first seed's primary killed
// at the moment a client starts, connect() waited on the dead seed past the
// op timeout, init answered info, and the run stopped. So a seed (the
// connection that reads the slot map) gets two tries, then connect() fails
// and the next attempt starts from the next seed.
//
// Every node's own connection keeps the shipped backoff (50 ms a retry, at
// most 500 ms), which never gives up. It once gave up too, until init was
// done: a primary killed while a client was still connecting to it left that
// node's client closed, and createCluster keeps a closed client in its slot
// map (a rediscovery reuses the clients it has: redis/node-redis#3396, fixed
// by PR #3403 in a release Debian does not carry), so every command for the
// lock's slot failed "The client is closed" for the rest of the run, no
// MOVED ever came to refresh the map, and the one client that had started
// before the kill held the lock alone (cluster-failover-race, lease lost
// instead of granted twice: 2 of 4 runs started side by side). The one
// server of --topology standalone has no map to poison: its client gives up
// after two tries until init is done, and connect() opens a new one.
let ready = false;
const seedSocket = {
  connectTimeout: opTimeout,
  reconnectStrategy: (retries) => (retries >= 2 ? new Error('seed unreachable') : 50),
};
const socket = {
  connectTimeout: opTimeout,
  reconnectStrategy: (retries) => (!ready && !cluster && retries >= 2 ? new Error('server unreachable') : Math.min(retries * 50, 500)),
};

function hostPort(addr) {
  const i = addr.lastIndexOf(':');
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
}

// open makes the client of one connect attempt; attempt n seeds the cluster
// client from the n-th node on.
function open(n) {
  let c;
  if (cluster) {
    const from = n % seeds.length;
    c = redis.createCluster({
      rootNodes: seeds.slice(from).concat(seeds.slice(0, from)).map((a) => ({ socket: { ...seedSocket, ...hostPort(a) } })),
      defaults: { socket, disableOfflineQueue: true },
    });
  } else {
    c = redis.createClient({ url: url(process.env.LOCKJEPSEN_ADDR), socket, disableOfflineQueue: true });
  }
  // A connection's errors are the commands' to report; unhandled, they
  // would end the process.
  c.on('error', (e) => process.stderr.write('node-redis: ' + e.message + '\n'));
  return c;
}
let valkey;

function send(key, args) {
  return cluster ? valkey.sendCommand(key, false, args) : valkey.sendCommand(args);
}

// connect retries for as long as lockjepsen waits for init (30 s, less a
// margin): a client that starts while a primary is down finds the slot map
// from the next seed, and a first attempt that fails under load is not the
// last. A run's clients start while its faults run, and one whose init
// answered "no reply within 1000 ms" once stopped a whole run.
async function connect() {
  const deadline = Date.now() + 25000;
  for (let n = 0; ; n++) {
    valkey = open(n);
    // A primary down at init is retried for ever too, by its node's own
    // connection: an attempt that has not connected in 5 s is dropped and
    // the next seed asked.
    const attempt = valkey.connect();
    attempt.catch(() => {});
    let timer;
    const late = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error('connect took over 5 s')), 5000);
    });
    try {
      await Promise.race([attempt, late]);
      ready = true;
      return;
    } catch (e) {
      await valkey.disconnect().catch(() => {});
      if (Date.now() > deadline) {
        throw e;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      clearTimeout(timer);
    }
  }
}

async function serve(req) {
  const { op, key, token } = req;
  const ttl = String(req.ttl_ms || 1000);
  switch (op) {
    case 'init':
      await connect();
      return { type: 'ok' };
    case 'acquire':
      if (await send(key, ['SET', key, token, 'NX', 'PX', ttl]) === 'OK') {
        return { type: 'ok' };
      }
      return { type: 'fail', error: 'SET NX PX: held by another client' };
    case 'extend':
      if (await send(key, ['SET', key, token, 'IFEQ', token, 'PX', ttl]) === 'OK') {
        return { type: 'ok' };
      }
      return { type: 'fail', error: 'SET IFEQ PX returned nil: this token does not hold the lock', not_held: true };
    case 'release':
      if (await send(key, ['DELIFEQ', key, token]) === 1) {
        return { type: 'ok' };
      }
      return { type: 'fail', error: 'DELIFEQ returned 0: this token does not hold the lock', not_held: true };
  }
  return { type: 'fail', error: 'unknown op ' + op };
}

// outcome reads an error the library threw: an error reply or a command
// never sent (the client offline, closed, or no node for the slot) had no
// effect; anything else (a socket closed mid-command) may have.
function outcome(e) {
  const name = e && e.constructor && e.constructor.name;
  if (name === 'ErrorReply' || name === 'ClientOfflineError' || name === 'ClientClosedError' ||
      name === 'ConnectionTimeoutError' || /ECONNREFUSED|Cannot find node|not connected/i.test(String(e && e.message))) {
    return { type: 'fail', error: String(e.message || e) };
  }
  return { type: 'info', error: (name || 'Error') + ': ' + String(e && e.message) };
}

async function answer(req) {
  let rep;
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ type: 'info', error: 'no reply within ' + opTimeout + ' ms' }), opTimeout);
  });
  try {
    // init has lockjepsen's own 30 s; every other op the run's op timeout.
    rep = await (req.op === 'init' ? serve(req) : Promise.race([serve(req), timeout]));
  } catch (e) {
    rep = outcome(e);
  } finally {
    clearTimeout(timer);
  }
  rep.id = req.id;
  process.stdout.write(JSON.stringify(rep) + '\n');
}

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim()) {
    answer(JSON.parse(line));
  }
});
// EOF on stdin: the run is over.
lines.on('close', () => {
  if (!valkey) {
    process.exit(0);
  }
  valkey.disconnect().catch(() => {}).finally(() => process.exit(0));
});
