// The amqplib client shim: the shim contract in fuzzer/clients/shims.py.
//
// Clean outcomes are amqplib's 'error' and 'close' events and the rejections of its calls;
// there is no process-wide handler, so anything thrown elsewhere is a crash.
// Header values: strings as they are, byte arrays "hex:...", decimals "<digits>E-<places>",
// timestamps integer seconds, floats JSON cannot carry as strings, 64-bit integers as numbers.
'use strict';

const { PROPERTY_NAMES, emit, parseArgs } = require('./common.js');

const amqp = require('amqplib');

const QUEUE = 'amqpfuzz-shim';
const NAME = 'amqplib';

function jsonable(value) {
  if (Buffer.isBuffer(value)) return `hex:${value.toString('hex')}`;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(jsonable);
  if (value !== null && typeof value === 'object') {
    if (value['!'] === 'decimal') return `${value.value.digits}E-${value.value.places}`;
    if (value['!'] === 'timestamp') return value.value;
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
  emit('message', n, {
    via,
    channel,
    delivery_tag: msg.fields.deliveryTag ?? null,
    redelivered: msg.fields.redelivered ?? null,
    exchange: msg.fields.exchange,
    routing_key: msg.fields.routingKey,
    body: msg.content.toString('hex'),
    properties,
  });
}

// How the connection's 'close' event says it ended.
function closedBy(err) {
  if (!err) return { by: 'client', code: null, text: null };
  const server = /^Connection closed: (\d+) \(.*?\) with message "([\s\S]*)"$/.exec(err.message);
  if (server && typeof err.code === 'number') {
    return { by: 'server', code: err.code, text: server[2] };
  }
  if (err.message === 'Unexpected close' || typeof err.code === 'string') {
    return { by: 'socket', code: null, text: err.message };
  }
  return null; // an error of amqplib's own
}

function errorEvent(err) {
  return {
    class: `amqplib:${err.name || err.constructor.name}`,
    code: typeof err.code === 'number' ? err.code : null,
    message: String(err.message),
  };
}

async function session(args, n, state) {
  const url = new URL(args.url);
  url.searchParams.set('heartbeat', '0');
  const conn = await amqp.connect(url.toString(), { timeout: 10000 });
  state.conn = conn;
  conn.on('error', () => {}); // the 'close' event that follows says how it ended
  state.connClosed = new Promise((resolve) => conn.on('close', (err) => resolve({ err })));
  conn.on('close', (err) => {
    state.closeEvent = { err };
  });
  const server = {};
  for (const [k, v] of Object.entries(conn.connection.serverProperties || {})) {
    if (typeof v === 'string') server[k] = v;
  }
  emit('connected', n, { server_properties: server });
  const ch = await conn.createConfirmChannel(); // channel.open and confirm.select
  emit('channel', n, { channel: ch.ch });
  state.channelClosed = new Promise((resolve) => {
    ch.on('error', (err) => {
      state.channelError = err;
      resolve({ err });
    });
    ch.on('close', () => resolve({}));
  });
  ch.on('return', (msg) => message(n, 'return', ch.ch, msg));
  const declared = await ch.assertQueue(QUEUE, {
    durable: false,
    exclusive: false,
    autoDelete: false,
  });
  emit('declared', n, {
    queue: declared.queue,
    message_count: declared.messageCount,
    consumer_count: declared.consumerCount,
  });
  let tag = null;
  const consuming = await ch.consume(
    QUEUE,
    (msg) => {
      if (msg === null) {
        emit('cancelled', n, { tag });
        return;
      }
      message(n, 'deliver', ch.ch, msg);
      ch.ack(msg);
    },
    { noAck: false },
  );
  tag = consuming.consumerTag;
  emit('consuming', n, { tag });
  const body = Buffer.from(`amqpfuzz-shim-${n}`, 'ascii');
  const nacked = await new Promise((resolve) => {
    ch.publish(
      '',
      QUEUE,
      body,
      { contentType: 'text/plain', deliveryMode: 1, headers: { shim: NAME }, mandatory: true },
      (err) => resolve(err),
    );
  });
  if (nacked && nacked.message !== 'message nacked') throw nacked; // the channel closed
  emit('confirm', n, { ack: !nacked });
  const got = await ch.get(QUEUE, { noAck: false });
  if (got === false) {
    emit('get-empty', n, {});
  } else {
    message(n, 'get', ch.ch, got);
    ch.ack(got);
  }
  let timer;
  const lingered = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ lingered: true }), args.linger * 1000);
  });
  const end = await Promise.race([lingered, state.connClosed, state.channelClosed]);
  clearTimeout(timer);
  if (end.lingered) {
    await conn.close();
    return;
  }
  throw end.err || new Error('channel closed');
}

async function runCase(args, n) {
  emit('connecting', n, {});
  const state = { conn: null, closeEvent: null, channelError: null };
  try {
    await session(args, n, state);
    emit('closed', n, { by: 'client', code: null, text: null });
    return;
  } catch (err) {
    const closing = state.closeEvent ? closedBy(state.closeEvent.err) : null;
    if (closing && closing.by !== 'client') {
      emit('closed', n, closing);
    } else if (state.closeEvent && state.closeEvent.err) {
      emit('error', n, errorEvent(state.closeEvent.err));
    } else if (state.channelError) {
      emit('error', n, errorEvent(state.channelError));
    } else if (!state.conn && closedBy(err) && closedBy(err).by === 'socket') {
      emit('closed', n, closedBy(err));
    } else {
      emit('error', n, errorEvent(err));
    }
  }
  if (state.conn && !state.closeEvent) state.conn.connection.stream.destroy();
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  for (let n = 0; ; n++) {
    await runCase(args, n);
    if (args.once) process.exit(0);
  }
}

main();
