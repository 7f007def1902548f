// What the Node client shims share (node-amqplib, node-rhea, node-cloudamqp): their command
// line, the JSON lines they print and the 0-9-1 property names. amqpfuzz copies this file
// beside each shim.js when it builds one (fuzzer/clients/builds.py), which reads it as
// require('./common.js').
'use strict';

// The 0-9-1 basic properties by the camelCase names the Node libraries give them, in the
// specification's words (a library that keeps no cluster-id never has that one).
const PROPERTY_NAMES = {
  contentType: 'content-type',
  contentEncoding: 'content-encoding',
  headers: 'headers',
  deliveryMode: 'delivery-mode',
  priority: 'priority',
  correlationId: 'correlation-id',
  replyTo: 'reply-to',
  expiration: 'expiration',
  messageId: 'message-id',
  timestamp: 'timestamp',
  type: 'type',
  userId: 'user-id',
  appId: 'app-id',
  clusterId: 'cluster-id',
};

// One event: its name and case first, then its fields.
function emit(event, n, fields) {
  process.stdout.write(`${JSON.stringify({ event, case: n, ...fields })}\n`);
}

// The command line: URL [--once] [--linger SECONDS], the URL before or after the options (a
// wrong one: usage, status 2).
function parseArgs(argv) {
  const args = { url: null, once: false, linger: 10 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--once') args.once = true;
    else if (argv[i] === '--linger' && i + 1 < argv.length) args.linger = Number(argv[++i]);
    else if (args.url === null && !argv[i].startsWith('-')) args.url = argv[i];
    else args.url = undefined;
  }
  if (!args.url || Number.isNaN(args.linger)) {
    process.stderr.write('usage: shim.js URL [--once] [--linger SECONDS]\n');
    process.exit(2);
  }
  return args;
}

module.exports = { PROPERTY_NAMES, emit, parseArgs };
