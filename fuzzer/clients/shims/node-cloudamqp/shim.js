// The @cloudamqp/amqp-client (amqp-client.js) client shim: the 0-9-1 shim contract in
// fuzzer/clients/shims/__init__.py.
//
// Clean outcomes: the library's AMQPError (a rejection of its calls, or what it hands to
// client.onerror and channel.onerror), the plain Errors it rejects with by design ("Message
// rejected" for a nack, "Connection closed by client") and the socket's own errors it passes
// on (a Node system error, with a string code). How a case ended is read from the library's
// messages: "connection closed: <text> (<code>)" is the server's connection.close,
// "channel <n> closed: <text> (<code>)" its channel.close (an `error` with that code), anything
// else on the connection the socket. There is no process-wide handler: whatever else it throws
// (a TypeError or RangeError out of its frame decoding, or the AMQPError it throws from the
// socket's 'data' listener on a bad frame end or an oversized frame) is an uncaught exception or
// an unhandled rejection, and Node prints its stack and exits nonzero (a crash).
//
// What the library cannot show: it skips connection.start unread (server_properties are
// always {}) and never reads cluster-id; strings are decoded as UTF-8 (bad octets become
// U+FFFD); a decimal arrives as a float (value / 10^scale, shown as that number); 64-bit
// integers, delivery tags and timestamps pass through a double (precision beyond 2^53 is lost;
// a timestamp out of Date's range is an Invalid Date, shown as that text); a header key
// "__proto__" is swallowed by the plain object the table is read into.
// Header values otherwise: strings as they are, byte arrays "hex:...", timestamps integer
// seconds, floats JSON cannot carry as strings, a void as null.
//
// The connect timeout is the library's own (the socket's idle timeout while it connects, an
// AMQPError "timeout"), set to 10 s instead of its 60 s; heartbeats stay off (its default).
'use strict';

const { PROPERTY_NAMES, emit, parseArgs } = require('./common.js');

const { AMQPClient, AMQPError } = require('@cloudamqp/amqp-client');

const QUEUE = 'amqpfuzz-shim';
const NAME = 'cloudamqp';
const CONNECT_TIMEOUT_MS = 10000;
// the plain Errors the library rejects with by design
const LIBRARY_MESSAGES = new Set(['Message rejected', 'Connection closed by client']);
const SERVER_CLOSE = /^connection closed: ([\s\S]*) \((\d+)\)$/;
const CHANNEL_CLOSE = /^channel \d+ closed: ([\s\S]*) \((\d+)\)$/;
// what the library forwards from a channel's onerror to the connection's (4.x)
const FORWARDED = /^Channel \d+ closed: /;
const ENDED = { ended: true }; // thrown when the connection or the channel ended mid-step

function hex(bytes) {
  if (!bytes) return '';
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function jsonable(value) {
  if (value instanceof Uint8Array) return `hex:${hex(value)}`;
  if (value instanceof Date) {
    const ms = value.getTime();
    return Number.isNaN(ms) ? String(value) : Math.floor(ms / 1000);
  }
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(jsonable);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonable(v)]));
  }
  return value;
}

function message(n, via, channel, msg) {
  const properties = {};
  for (const [name, key] of Object.entries(PROPERTY_NAMES)) {
    const value = msg.properties[name];
    if (value !== undefined && value !== null) properties[key] = jsonable(value);
  }
  const returned = via === 'return';
  emit('message', n, {
    via,
    channel,
    delivery_tag: returned ? null : msg.deliveryTag,
    redelivered: returned ? null : msg.redelivered,
    exchange: msg.exchange,
    routing_key: msg.routingKey,
    body: hex(msg.body),
    properties,
  });
}

// An error of the library's own (a clean outcome); anything else is a crash.
function clean(err) {
  if (err instanceof AMQPError) return true;
  return (
    err instanceof Error &&
    err.constructor === Error &&
    (typeof err.code === 'string' || LIBRARY_MESSAGES.has(err.message))
  );
}

// A promise of the library's whose clean rejection says nothing the case's end will not.
function quiet(promise) {
  promise.catch((err) => {
    if (!clean(err)) throw err; // an unhandled rejection: the shim dies of it
  });
}

// What the case waits on: `ended` resolves when the library reports the connection or the
// channel ended (client.onerror, channel.onerror).
function caseState() {
  const state = { client: null, connected: false, errors: [], channelReason: null };
  state.ended = new Promise((resolve) => {
    state.wake = () => resolve(ENDED);
  });
  return state;
}

// One of the library's calls, given up when the connection or the channel ends first (3.x
// leaves its calls pending when the socket closes).
async function step(state, promise) {
  const got = await Promise.race([promise, state.ended]);
  if (got === ENDED) throw ENDED;
  return got;
}

async function session(args, n, state) {
  const url = new URL(args.url);
  url.searchParams.set('heartbeat', '0');
  const client = new AMQPClient(url.toString());
  client.logger = undefined; // 3.x logs to the console (stdout) by default
  state.client = client;
  client.onerror = (err) => {
    state.errors.push(err);
    state.wake();
  };
  const connecting = client.connect();
  if (client.socket) client.socket.setTimeout(CONNECT_TIMEOUT_MS); // its connect timeout
  await step(state, connecting);
  state.connected = true;
  emit('connected', n, { server_properties: {} }); // the library skips connection.start
  const opening = client.channel();
  // the channel object exists before channel.open-ok: hooked before anything can close it
  const channel = client.channels.find((ch) => ch && ch.id > 0);
  channel.onerror = (reason) => {
    state.channelReason = reason;
    state.wake();
  };
  channel.onReturn = (msg) => message(n, 'return', channel.id, msg);
  await step(state, opening);
  emit('channel', n, { channel: channel.id });
  await step(state, channel.confirmSelect());
  const declared = await step(
    state,
    channel.queueDeclare(QUEUE, { durable: false, exclusive: false, autoDelete: false }),
  );
  emit('declared', n, {
    queue: declared.name,
    message_count: declared.messageCount,
    consumer_count: declared.consumerCount,
  });
  const consumer = await step(
    state,
    channel.basicConsume(QUEUE, { noAck: false }, (msg) => {
      message(n, 'deliver', channel.id, msg);
      quiet(channel.basicAck(msg.deliveryTag));
    }),
  );
  emit('consuming', n, { tag: consumer.tag });
  consumer.wait().then(
    () => {},
    (err) => {
      if (err && err.message === 'Consumer cancelled by the server') {
        emit('cancelled', n, { tag: consumer.tag });
      }
    },
  );
  const body = Buffer.from(`amqpfuzz-shim-${n}`, 'ascii');
  const properties = { contentType: 'text/plain', deliveryMode: 1, headers: { shim: NAME } };
  let ack = true;
  try {
    await step(state, channel.basicPublish('', QUEUE, body, properties, true));
  } catch (err) {
    if (err === ENDED || !(err.constructor === Error && err.message === 'Message rejected')) {
      throw err;
    }
    ack = false; // a basic.nack
  }
  emit('confirm', n, { ack });
  const got = await step(state, channel.basicGet(QUEUE, { noAck: false }));
  if (got === null) {
    emit('get-empty', n, {});
  } else {
    message(n, 'get', channel.id, got);
    quiet(channel.basicAck(got.deliveryTag));
  }
  let timer;
  const lingered = new Promise((resolve) => {
    timer = setTimeout(resolve, args.linger * 1000);
  });
  const end = await Promise.race([lingered, state.ended]);
  clearTimeout(timer);
  if (end === ENDED) throw ENDED;
  await step(state, client.close());
}

// The final event of a case that did not end with the client's own close.
function ending(state, err) {
  const connection = state.errors.find((e) => !FORWARDED.test(e.message));
  if (connection) {
    const server = SERVER_CLOSE.exec(connection.message);
    if (server) return ['closed', { by: 'server', code: Number(server[2]), text: server[1] }];
    return ['closed', { by: 'socket', code: null, text: connection.message }];
  }
  if (state.channelReason !== null) {
    const closed = CHANNEL_CLOSE.exec(state.channelReason);
    return [
      'error',
      {
        class: 'AMQPError',
        code: closed ? Number(closed[2]) : null,
        message: state.channelReason,
      },
    ];
  }
  if (err === ENDED) return ['error', { class: 'AMQPError', code: null, message: 'ended' }];
  if (!state.connected) {
    // connect() rejected: the server's close, the socket's end or error, or the timeout
    const server = SERVER_CLOSE.exec(err.message);
    if (server) return ['closed', { by: 'server', code: Number(server[2]), text: server[1] }];
    if (err.message === 'Connection ended' || /\bE[A-Z]{3,}\b/.test(err.message)) {
      return ['closed', { by: 'socket', code: null, text: err.message }];
    }
  }
  return ['error', { class: err.name || err.constructor.name, code: null, message: err.message }];
}

async function runCase(args, n) {
  emit('connecting', n, {});
  const state = caseState();
  try {
    await session(args, n, state);
    emit('closed', n, { by: 'client', code: null, text: null });
  } catch (err) {
    if (err !== ENDED && !clean(err)) throw err; // not the library's own: a crash
    const [event, fields] = ending(state, err);
    emit(event, n, fields);
  }
  const socket = state.client && state.client.socket;
  if (socket) socket.destroy();
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  for (let n = 0; ; n++) {
    await runCase(args, n);
    if (args.once) process.exit(0);
  }
}

main();
