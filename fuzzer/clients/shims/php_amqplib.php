<?php
// The php-amqplib client shim: the shim contract in fuzzer/clients/shims.py.
//
// Clean outcomes are php-amqplib's exceptions (PhpAmqpLib\Exception\*); anything else is
// left uncaught (a crash). php-amqplib cannot read without a timeout: its read/write timeout
// is set to a day. Header values: UTF-8 strings as they are, other strings (PHP does not tell
// byte arrays from strings) "hex:...", decimals "<n>E-<e>", timestamps integer seconds,
// floats JSON cannot carry as strings, unsigned 64-bit integers past PHP_INT_MAX as the decimal
// strings php-amqplib gives; a nested empty table reads as [].

declare(strict_types=1);

require '/usr/share/php/PhpAmqpLib/autoload.php';

use PhpAmqpLib\Connection\AMQPStreamConnection;
use PhpAmqpLib\Exception\AMQPBasicCancelException;
use PhpAmqpLib\Exception\AMQPConnectionClosedException;
use PhpAmqpLib\Exception\AMQPExceptionInterface;
use PhpAmqpLib\Exception\AMQPProtocolException;
use PhpAmqpLib\Exception\AMQPSocketException;
use PhpAmqpLib\Exception\AMQPTimeoutException;
use PhpAmqpLib\Message\AMQPMessage;
use PhpAmqpLib\Wire\AMQPAbstractCollection;
use PhpAmqpLib\Wire\AMQPDecimal;
use PhpAmqpLib\Wire\AMQPReader;
use PhpAmqpLib\Wire\AMQPTable;

const QUEUE = 'amqpfuzz-shim';
const NAME = 'php-amqplib';
const NO_TIMEOUT = 86400.0;
const PROPERTY_NAMES = [
    'content_type' => 'content-type', 'content_encoding' => 'content-encoding',
    'application_headers' => 'headers', 'delivery_mode' => 'delivery-mode',
    'priority' => 'priority', 'correlation_id' => 'correlation-id', 'reply_to' => 'reply-to',
    'expiration' => 'expiration', 'message_id' => 'message-id', 'timestamp' => 'timestamp',
    'type' => 'type', 'user_id' => 'user-id', 'app_id' => 'app-id', 'cluster_id' => 'cluster-id',
];

/** Remembers the server's connection.close (php-amqplib raises it as the exception class
 * it also raises for a dropped socket, with the class and method ids after its text). */
class Connection extends AMQPStreamConnection
{
    public static ?array $closedByServer = null;

    protected function connection_close(AMQPReader $reader)
    {
        try {
            parent::connection_close($reader);
        } catch (AMQPConnectionClosedException $e) {
            $text = preg_replace('/\(\d+, \d+\)$/', '', $e->getMessage());
            self::$closedByServer = [$e->getCode(), $text];
            throw $e;
        }
    }
}

$currentCase = 0;

function emit(string $event, array $fields = []): void
{
    global $currentCase;
    echo json_encode(['event' => $event, 'case' => $currentCase] + $fields, JSON_UNESCAPED_SLASHES), "\n";
    fflush(STDOUT);
}

function jsonable($value)
{
    if ($value instanceof AMQPAbstractCollection) {
        $value = $value->getNativeData();
    }
    if ($value instanceof DateTimeInterface) {
        return $value->getTimestamp();
    }
    if ($value instanceof AMQPDecimal) {
        return $value->getN() . 'E-' . $value->getE();
    }
    if (is_string($value)) {
        return mb_check_encoding($value, 'UTF-8') ? $value : 'hex:' . bin2hex($value);
    }
    if (is_float($value) && !is_finite($value)) {
        return (string)$value;
    }
    if (is_array($value)) {
        $out = array_map('jsonable', $value);
        return array_is_list($value) ? $out : (object)$out;
    }
    return $value;
}

function text($value): string
{
    return mb_convert_encoding((string)$value, 'UTF-8', 'UTF-8');
}

function message(string $via, int $channel, AMQPMessage $msg, ?string $exchange = null, ?string $key = null): void
{
    $properties = [];
    foreach ($msg->get_properties() as $name => $value) {
        if (isset(PROPERTY_NAMES[$name]) && $value !== null) {
            $properties[PROPERTY_NAMES[$name]] = jsonable($value);
        }
    }
    emit('message', [
        'via' => $via,
        'channel' => $channel,
        'delivery_tag' => $via === 'return' ? null : $msg->getDeliveryTag(),
        'redelivered' => $via === 'return' ? null : $msg->isRedelivered(),
        'exchange' => jsonable($exchange ?? $msg->getExchange()),
        'routing_key' => jsonable($key ?? $msg->getRoutingKey()),
        'body' => bin2hex($msg->getBody()),
        'properties' => (object)$properties,
    ]);
}

/** Steps 2 to 9; returns when --linger passed with the connection open. */
function session(array $opts, ?Connection &$conn): void
{
    global $currentCase;
    $conn = new Connection(
        $opts['host'], $opts['port'], $opts['user'], $opts['password'], $opts['vhost'],
        false, 'AMQPLAIN', null, 'en_US', 10.0, NO_TIMEOUT, null, false, 0
    );
    $server = [];
    foreach ($conn->getServerProperties() as $k => [$type, $v]) {
        if (is_string($v) && $type === 'S') {
            $server[$k] = text($v);
        }
    }
    emit('connected', ['server_properties' => (object)$server]);
    $ch = $conn->channel();
    $number = $ch->getChannelId();
    emit('channel', ['channel' => $number]);
    $confirm = null;
    $ch->set_ack_handler(function () use (&$confirm) { $confirm = true; });
    $ch->set_nack_handler(function () use (&$confirm) { $confirm = false; });
    $ch->set_return_listener(function ($code, $text, $exchange, $key, AMQPMessage $msg) use ($number) {
        message('return', $number, $msg, $exchange, $key);
    });
    $ch->confirm_select();
    [$queue, $count, $consumers] = $ch->queue_declare(QUEUE, false, false, false, false);
    emit('declared', ['queue' => text($queue), 'message_count' => $count, 'consumer_count' => $consumers]);
    $tag = $ch->basic_consume(QUEUE, '', false, false, false, false, function (AMQPMessage $msg) use ($ch, $number) {
        message('deliver', $number, $msg);
        $ch->basic_ack($msg->getDeliveryTag());
    });
    emit('consuming', ['tag' => text($tag)]);
    $msg = new AMQPMessage("amqpfuzz-shim-$currentCase", [
        'content_type' => 'text/plain',
        'delivery_mode' => 1,
        'application_headers' => new AMQPTable(['shim' => NAME]),
    ]);
    $ch->basic_publish($msg, '', QUEUE, true);
    $ch->wait_for_pending_acks_returns();
    emit('confirm', ['ack' => $confirm !== false]);
    $got = $ch->basic_get(QUEUE, false);
    if ($got === null) {
        emit('get-empty');
    } else {
        message('get', $number, $got);
        $ch->basic_ack($got->getDeliveryTag());
    }
    $deadline = microtime(true) + $opts['linger'];
    while (($left = $deadline - microtime(true)) > 0) {
        try {
            $ch->wait(null, false, $left);
        } catch (AMQPTimeoutException $e) {
            break; // --linger passed
        } catch (AMQPBasicCancelException $e) {
            emit('cancelled', ['tag' => text($e->getConsumerTag())]);
        }
    }
}

function runCase(array $opts): void
{
    emit('connecting');
    $conn = null;
    Connection::$closedByServer = null;
    try {
        session($opts, $conn);
        $conn->close();
        emit('closed', ['by' => 'client', 'code' => null, 'text' => null]);
        return;
    } catch (AMQPExceptionInterface $e) {
        if (Connection::$closedByServer !== null) {
            [$code, $reply] = Connection::$closedByServer;
            emit('closed', ['by' => 'server', 'code' => $code, 'text' => text($reply)]);
        } elseif ($e instanceof AMQPConnectionClosedException
            || $e instanceof AMQPSocketException) {
            emit('closed', ['by' => 'socket', 'code' => null, 'text' => text($e->getMessage())]);
        } else {
            $code = $e instanceof AMQPProtocolException ? $e->getCode() : null;
            emit('error', ['class' => get_class($e), 'code' => $code, 'message' => text($e->getMessage())]);
        }
    }
    if ($conn !== null) {
        $io = $conn->getIO();
        $io->close(); // the socket closed, no closing handshake
    }
}

function options(array $argv): array
{
    $url = null;
    $once = false;
    $linger = 10.0;
    for ($i = 1; $i < count($argv); $i++) {
        if ($argv[$i] === '--once') {
            $once = true;
        } elseif ($argv[$i] === '--linger' && $i + 1 < count($argv)) {
            $linger = (float)$argv[++$i];
        } elseif ($url === null && $argv[$i][0] !== '-') {
            $url = $argv[$i];
        } else {
            $url = null;
            break;
        }
    }
    $parts = $url === null ? false : parse_url($url);
    if ($parts === false || !isset($parts['host'])) {
        fwrite(STDERR, "usage: php_amqplib.php URL [--once] [--linger SECONDS]\n");
        exit(2);
    }
    $path = isset($parts['path']) ? rawurldecode(ltrim($parts['path'], '/')) : '';
    return [
        'host' => $parts['host'],
        'port' => $parts['port'] ?? 5672,
        'user' => rawurldecode($parts['user'] ?? 'guest'),
        'password' => rawurldecode($parts['pass'] ?? 'guest'),
        'vhost' => $path === '' ? '/' : $path,
        'once' => $once,
        'linger' => $linger,
    ];
}

$opts = options($argv);
for ($currentCase = 0;; $currentCase++) {
    runCase($opts);
    if ($opts['once']) {
        exit(0);
    }
}
