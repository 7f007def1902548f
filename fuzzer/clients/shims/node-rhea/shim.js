// The rhea client shim: the AMQP 1.0 shim contract in fuzzer/clients/shims/__init__.py.
//
// One container and connection per case, listened to on the connection (its sessions' and
// links' events bubble up to it; those of sessions and links the peer began are not the shim's
// and pass); a case ends when its socket closes. Clean outcomes are the peer's close, the
// socket's end and rhea's own errors: its 'protocol_error' event, a SASL failure (a
// ConnectionError with no close from the peer) and the 'error' event with rhea's error classes
// (ProtocolError, TypeError, ConnectionError) or a plain Error (what rhea throws on a frame out
// of place, e.g. "End already received"). Any other error (a JavaScript TypeError or RangeError
// out of its decoding, say of a truncated message) is thrown on: a crash.
//
// What rhea cannot show: a uuid is 16 bytes ("hex:..."), not told apart from binary; the header
// is what rhea reads of a header section (nothing without one); rhea reads a described value it
// knows (an outcome in a body, say) as its own composite object. Values: binary "hex:<hex>",
// timestamps integer milliseconds, described values {"descriptor", "value"}, 64-bit integers
// past 2^53 as the 8 bytes rhea keeps ("hex:...").
'use strict';

const { emit, parseArgs } = require('./common.js');

const rhea = require('rhea');
const rheaErrors = require('rhea/lib/errors.js');

const ADDRESS = 'amqpfuzz-shim';
const NAME = 'rhea';
const CONNECT_TIMEOUT = 10; // seconds
const PROPERTY_NAMES = {
  message_id: 'message-id',
  user_id: 'user-id',
  to: 'to',
  subject: 'subject',
  reply_to: 'reply-to',
  correlation_id: 'correlation-id',
  content_type: 'content-type',
  content_encoding: 'content-encoding',
  absolute_expiry_time: 'absolute-expiry-time',
  creation_time: 'creation-time',
  group_id: 'group-id',
  group_sequence: 'group-sequence',
  reply_to_group_id: 'reply-to-group-id',
};
const HEADER_NAMES = {
  durable: 'durable',
  priority: 'priority',
  ttl: 'ttl',
  first_acquirer: 'first-acquirer',
  delivery_count: 'delivery-count',
};
const OUTCOMES = ['accepted', 'rejected', 'released', 'modified'];
const DATA = 0x75;

function jsonable(value) {
  if (value === undefined) return null;
  if (Buffer.isBuffer(value)) return `hex:${value.toString('hex')}`;
  if (value instanceof Date) {
    const ms = value.getTime();
    return Number.isFinite(ms) ? ms : String(ms);
  }
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(jsonable);
  if (value !== null && typeof value === 'object') {
    if (value.descriptor !== undefined && value.value !== undefined) {
      return {
        descriptor: jsonable(rhea.types.unwrap(value.descriptor)),
        value: jsonable(rhea.types.unwrap(value.value)),
      };
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonable(v)]));
  }
  return value;
}

function strings(found) {
  const shown = {};
  for (const [k, v] of Object.entries(found || {})) {
    if (typeof v === 'string') shown[k] = v;
  }
  return shown;
}

// The body as rhea gives it: data and amqp-sequence sections as rhea's Section objects.
function bodyOf(msg) {
  const body = msg.body;
  if (body === undefined) return {};
  if (body !== null && body.constructor && body.constructor.name === 'Section') {
    const sections = body.multiple ? body.content : [body.content];
    if (body.typecode === DATA) {
      return { data: sections.map((s) => (Buffer.isBuffer(s) ? s.toString('hex') : jsonable(s))) };
    }
    return { sequence: sections.map(jsonable) };
  }
  return { value: jsonable(body) };
}

function fieldsOf(msg, names) {
  const shown = {};
  for (const [name, key] of Object.entries(names)) {
    const value = msg[name];
    if (value === undefined || value === null) continue;
    shown[key] = name === 'user_id' && Buffer.isBuffer(value) ? value.toString('hex') : jsonable(value);
  }
  return shown;
}

function conditionOf(error) {
  return {
    condition: error && error.condition !== undefined ? jsonable(error.condition) : null,
    description: error && error.description !== undefined ? jsonable(error.description) : null,
  };
}

function rheasOwn(err) {
  return (
    err instanceof rheaErrors.ProtocolError ||
    err instanceof rheaErrors.TypeError ||
    err instanceof rheaErrors.ConnectionError ||
    (err instanceof Error && err.constructor === Error)
  );
}

function errorEvent(err) {
  return {
    event: 'error',
    class: `rhea:${err.name || err.constructor.name}`,
    condition: typeof err.condition === 'string' ? err.condition : null,
    message: String(err.message),
  };
}

function connectOptions(args) {
  const url = new URL(args.url);
  const host = url.hostname || '127.0.0.1';
  const mechanisms = rhea.sasl.client_mechanisms();
  if (url.username) {
    mechanisms.enable_plain(decodeURIComponent(url.username), decodeURIComponent(url.password));
  } else {
    mechanisms.enable_anonymous();
  }
  return {
    host,
    port: Number(url.port) || 5672,
    hostname: host,
    sasl_mechanisms: mechanisms,
    reconnect: false, // no idle_time_out: none of ours
  };
}

function runCase(args, n) {
  emit('connecting', n, {});
  return new Promise((resolve) => {
    const container = rhea.create_container({ id: `amqpfuzz-shim-rhea-${process.pid}-${n}` });
    let final = null; // the case's last event, once known
    let server = null; // the peer's close: its error, or {}
    let socketError = null;
    let opened = false;
    let sent = false;
    const timers = [];

    const conn = container.connect(connectOptions(args));
    const abort = () => conn.socket && conn.socket.destroy();
    const failed = (err) => {
      if (!rheasOwn(err)) throw err; // a crash
      if (final === null) final = errorEvent(err);
      abort();
    };

    timers.push(
      setTimeout(() => {
        if (opened || final !== null) return;
        final = {
          event: 'error',
          class: 'TimeoutError',
          condition: null,
          message: `no open from the peer in ${CONNECT_TIMEOUT} s`,
        };
        abort();
      }, CONNECT_TIMEOUT * 1000),
    );

    conn.on('connection_open', () => {
      opened = true;
      const open = conn.remote.open || {};
      emit('connected', n, {
        container_id: open.container_id === undefined ? null : jsonable(open.container_id),
        properties: strings(jsonable(open.properties)),
      });
      timers.push(
        setTimeout(() => {
          if (final !== null) return;
          if (server !== null) {
            abort(); // closed, but the peer keeps the socket: the case is over
            return;
          }
          final = { event: 'closed', by: 'client', condition: null, description: null };
          conn.close();
        }, args.linger * 1000),
      );
      session = conn.create_session();
      session.begin();
    });
    // the shim's own session and links only: rhea raises the same events for the peer's
    let session = null;
    let receiver = null;
    let sender = null;
    conn.on('session_open', (context) => {
      if (context.session !== session) return;
      emit('session', n, {});
      receiver = context.session.open_receiver({
        name: `amqpfuzz-shim-receiver-${n}`,
        source: { address: ADDRESS },
        credit_window: 10,
        autoaccept: true,
        rcv_settle_mode: 0, // first
        snd_settle_mode: 0, // unsettled
      });
    });
    conn.on('receiver_open', (context) => {
      if (context.receiver !== receiver || sender !== null) return;
      emit('receiving', n, { link: context.receiver.name });
      sender = context.session.open_sender({
        name: `amqpfuzz-shim-sender-${n}`,
        target: { address: ADDRESS },
        snd_settle_mode: 0,
        rcv_settle_mode: 0,
        treat_modified_as_released: false,
      });
    });
    conn.on('sender_open', (context) => {
      if (context.sender === sender) emit('sending', n, { link: context.sender.name });
    });
    conn.on('sendable', (context) => {
      if (sent || context.sender !== sender) return;
      sent = true;
      context.sender.send({
        body: `amqpfuzz-shim-${n}`,
        message_id: `amqpfuzz-shim-${n}`,
        content_type: 'text/plain',
        application_properties: { shim: NAME },
      });
    });
    for (const outcome of OUTCOMES) {
      conn.on(outcome, (context) => {
        const fields = { outcome };
        if (outcome === 'rejected') Object.assign(fields, conditionOf(context.delivery.remote_state.error));
        emit('confirm', n, fields);
      });
    }
    conn.on('settled', (context) => {
      // a disposition that settles without an outcome (rhea raises only 'settled')
      if (context.sender && context.delivery.remote_state === undefined) {
        emit('confirm', n, { outcome: null });
      }
    });
    conn.on('message', (context) => {
      const msg = context.message;
      emit('message', n, {
        body: bodyOf(msg),
        properties: fieldsOf(msg, PROPERTY_NAMES),
        application_properties: jsonable(msg.application_properties || {}),
        annotations: jsonable(msg.message_annotations || {}),
        header: fieldsOf(msg, HEADER_NAMES),
        settled: context.delivery.remote_settled,
      });
      // rhea accepts it after this returns (autoaccept)
    });
    const detached = (link) => {
      const detach = link.remote.detach || {};
      emit('detached', n, { link: link.name, closed: Boolean(detach.closed), ...conditionOf(detach.error) });
    };
    conn.on('receiver_close', (context) => detached(context.receiver));
    conn.on('sender_close', (context) => detached(context.sender));
    conn.on('session_close', (context) => {
      emit('ended', n, conditionOf((context.session.remote.end || {}).error));
    });
    conn.on('connection_close', (context) => {
      if (conn.remote.close) {
        if (server === null) server = conn.remote.close.error || {};
      } else if (context.error && final === null) {
        final = errorEvent(context.error); // rhea's own (a SASL failure): no close came
      }
    });
    conn.on('disconnected', (context) => {
      if (context.error) socketError = context.error;
    });
    conn.on('protocol_error', failed);
    conn.on('error', failed);
    container.on('error', failed);

    conn.socket.on('close', () => {
      for (const timer of timers) clearTimeout(timer);
      let ending = final;
      if (ending === null && server !== null) {
        ending = { event: 'closed', by: 'server', ...conditionOf(server) };
      } else if (ending === null) {
        const description = socketError ? String(socketError.message || socketError) : null;
        ending = { event: 'closed', by: 'socket', condition: null, description };
      }
      const { event, ...fields } = ending;
      emit(event, n, fields);
      resolve();
    });
  });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  for (let n = 0; ; n++) {
    await runCase(args, n);
    if (args.once) process.exit(0);
  }
}

main();
