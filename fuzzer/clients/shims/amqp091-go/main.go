// The amqp091-go client shim: the 0-9-1 shim contract in fuzzer/clients/shims/__init__.py.
//
// Built in module mode (go.mod pins github.com/rabbitmq/amqp091-go from the Go module proxy;
// the same source builds against 1.5.0, Debian's version, and later ones). Errors the library
// returns are clean outcomes; a panic is a crash (never recovered here).
// Heartbeats: the library cannot turn them off when the server proposes an interval; the URL
// gets heartbeat=0 (unless it says otherwise) so that every version takes the server's
// interval (from 1.10.0 on, a Config.Heartbeat of 0 means 10 s instead).
// Header values: strings as they are, byte arrays "hex:...", decimals "<value>E-<scale>",
// timestamps integer seconds, floats JSON cannot carry as strings.
package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"reflect"
	"strings"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const queue = "amqpfuzz-shim"
const name = "amqp091-go"

var currentCase int

// emit prints one event: key, value pairs after the event's name, in their order.
func emit(event string, pairs ...interface{}) {
	var b bytes.Buffer
	b.WriteString(`{"event":` + jsonOf(event) + `,"case":` + jsonOf(currentCase))
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString("," + jsonOf(pairs[i]) + ":" + jsonOf(pairs[i+1]))
	}
	b.WriteString("}\n")
	os.Stdout.Write(b.Bytes())
}

func jsonOf(v interface{}) string {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // a value of ours that JSON cannot carry: a bug of the shim
	}
	return string(out)
}

// jsonable is a header table's value as JSON (the file's comment says how).
func jsonable(v interface{}) interface{} {
	switch x := v.(type) {
	case []byte:
		return "hex:" + hex.EncodeToString(x)
	case amqp.Decimal:
		return fmt.Sprintf("%dE-%d", x.Value, x.Scale)
	case time.Time:
		return x.Unix()
	case float32:
		return finite(float64(x))
	case float64:
		return finite(x)
	case amqp.Table:
		m := map[string]interface{}{}
		for k, item := range x {
			m[k] = jsonable(item)
		}
		return m
	case []interface{}:
		l := make([]interface{}, len(x))
		for i, item := range x {
			l[i] = jsonable(item)
		}
		return l
	default:
		return x
	}
}

func finite(f float64) interface{} {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}

// properties: those the library shows (it hides whether a property was sent: a zero value
// reads as absent, and it keeps no cluster-id).
func properties(ct, ce string, headers amqp.Table, mode, priority uint8,
	corr, replyTo, expiration, id string, ts time.Time, kind, user, app string) map[string]interface{} {
	p := map[string]interface{}{}
	for k, v := range map[string]string{"content-type": ct, "content-encoding": ce,
		"correlation-id": corr, "reply-to": replyTo, "expiration": expiration, "message-id": id,
		"type": kind, "user-id": user, "app-id": app} {
		if v != "" {
			p[k] = v
		}
	}
	if headers != nil {
		p["headers"] = jsonable(headers)
	}
	if mode != 0 {
		p["delivery-mode"] = mode
	}
	if priority != 0 {
		p["priority"] = priority
	}
	if !ts.IsZero() {
		p["timestamp"] = ts.Unix()
	}
	return p
}

func delivered(via string, channel uint16, d amqp.Delivery) {
	emit("message", "via", via, "channel", channel, "delivery_tag", d.DeliveryTag,
		"redelivered", d.Redelivered, "exchange", d.Exchange, "routing_key", d.RoutingKey,
		"body", hex.EncodeToString(d.Body), "properties", properties(d.ContentType,
			d.ContentEncoding, d.Headers, d.DeliveryMode, d.Priority, d.CorrelationId, d.ReplyTo,
			d.Expiration, d.MessageId, d.Timestamp, d.Type, d.UserId, d.AppId))
}

func returned(channel uint16, r amqp.Return) {
	emit("message", "via", "return", "channel", channel, "delivery_tag", nil,
		"redelivered", nil, "exchange", r.Exchange, "routing_key", r.RoutingKey,
		"body", hex.EncodeToString(r.Body), "properties", properties(r.ContentType,
			r.ContentEncoding, r.Headers, r.DeliveryMode, r.Priority, r.CorrelationId, r.ReplyTo,
			r.Expiration, r.MessageId, r.Timestamp, r.Type, r.UserId, r.AppId))
}

// ended says how a case ended on an error: the server's connection.close, the socket, or an
// error of the library's own.
func ended(err error, closes chan *amqp.Error) {
	select {
	case closing := <-closes:
		if closing != nil && closing.Server {
			emit("closed", "by", "server", "code", closing.Code, "text", closing.Reason)
			return
		}
		if closing != nil {
			err = closing
		}
	default:
	}
	if socketEnd(err) {
		emit("closed", "by", "socket", "code", nil, "text", err.Error())
		return
	}
	var code interface{}
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) {
		code = amqpErr.Code
	}
	emit("error", "class", fmt.Sprintf("%T", err), "code", code, "message", err.Error())
}

// socketEnd: the socket dropped (the library reports a read's end as a 501 frame error
// carrying the read's own error text).
func socketEnd(err error) bool {
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && !amqpErr.Server && amqpErr.Code == amqp.FrameError {
		for _, end := range []string{"EOF", "connection reset", "broken pipe", "use of closed network connection"} {
			if strings.Contains(amqpErr.Reason, end) {
				return true
			}
		}
	}
	return false
}

// withServerHeartbeat: the URL with heartbeat=0 (the server's interval), unless it names one.
func withServerHeartbeat(url string) string {
	if strings.Contains(url, "heartbeat=") {
		return url
	}
	if strings.Contains(url, "?") {
		return url + "&heartbeat=0"
	}
	return url + "?heartbeat=0"
}

func session(url string, linger time.Duration, conn **amqp.Connection, closes chan *amqp.Error) error {
	c, err := amqp.DialConfig(withServerHeartbeat(url), amqp.Config{Heartbeat: 0, Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		return err
	}
	*conn = c
	c.NotifyClose(closes)
	server := map[string]string{}
	for k, v := range c.Properties {
		if s, ok := v.(string); ok {
			server[k] = s
		}
	}
	emit("connected", "server_properties", server)
	ch, err := c.Channel()
	if err != nil {
		return err
	}
	id := uint16(reflect.ValueOf(ch).Elem().FieldByName("id").Uint()) // not exported
	emit("channel", "channel", id)
	// the library needs these read as they come, or it blocks
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	cancels := ch.NotifyCancel(make(chan string, 1))
	channelCloses := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := ch.Confirm(false); err != nil {
		return err
	}
	q, err := ch.QueueDeclare(queue, false, false, false, false, nil)
	if err != nil {
		return err
	}
	emit("declared", "queue", q.Name, "message_count", q.Messages, "consumer_count", q.Consumers)
	// the library names the consumer but does not tell the name: the shim names it
	tag := fmt.Sprintf("amqpfuzz-shim-%d-%d", os.Getpid(), currentCase)
	deliveries, err := ch.Consume(queue, tag, false, false, false, false, nil)
	if err != nil {
		return err
	}
	emit("consuming", "tag", tag)
	err = ch.PublishWithContext(context.Background(), "", queue, true, false, amqp.Publishing{
		ContentType:  "text/plain",
		DeliveryMode: 1,
		Headers:      amqp.Table{"shim": name},
		Body:         []byte(fmt.Sprintf("amqpfuzz-shim-%d", currentCase)),
	})
	if err != nil {
		return err
	}
	// handle answers one event (a confirm only while one is awaited): false when the case
	// ends (ending says why) or `wait` fires
	var ending error
	awaited := confirms
	handle := func(wait <-chan time.Time) bool {
		select {
		case confirm, ok := <-awaited:
			if !ok {
				ending = amqp.ErrClosed
				return false
			}
			emit("confirm", "ack", confirm.Ack)
			awaited = nil
		case d, ok := <-deliveries:
			if !ok {
				deliveries = nil
				return true
			}
			delivered("deliver", id, d)
			if err := d.Ack(false); err != nil {
				ending = err
				return false
			}
		case r, ok := <-returns:
			if ok {
				returned(id, r)
			} else {
				returns = nil
			}
		case t, ok := <-cancels:
			if ok {
				emit("cancelled", "tag", t)
			} else {
				cancels = nil
			}
		case e, ok := <-channelCloses:
			ending = amqp.ErrClosed
			if ok && e != nil {
				ending = e
			}
			return false
		case <-wait:
			return false
		}
		return true
	}
	for awaited != nil {
		if !handle(nil) {
			return ending
		}
	}
	got, ok, err := ch.Get(queue, false)
	if err != nil {
		return err
	}
	if ok {
		delivered("get", id, got)
		if err := got.Ack(false); err != nil {
			return err
		}
	} else {
		emit("get-empty")
	}
	deadline := time.After(linger)
	for handle(deadline) {
	}
	return ending
}

func runCase(url string, linger time.Duration) {
	emit("connecting")
	var conn *amqp.Connection
	closes := make(chan *amqp.Error, 1)
	err := session(url, linger, &conn, closes)
	if err == nil {
		err = conn.Close()
		if err == nil {
			emit("closed", "by", "client", "code", nil, "text", nil)
			return
		}
	}
	ended(err, closes)
	if conn != nil && !conn.IsClosed() {
		conn.Close()
	}
}

func main() {
	once := flag.Bool("once", false, "one case, then exit")
	linger := flag.Float64("linger", 10, "seconds to stay connected after the get")
	// the URL may come before the options: parse again after each argument
	var args []string
	flag.Parse()
	for flag.NArg() > 0 {
		args = append(args, flag.Arg(0))
		flag.CommandLine.Parse(flag.Args()[1:])
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: amqp091-go URL [--once] [--linger SECONDS]")
		os.Exit(2)
	}
	for currentCase = 0; ; currentCase++ {
		runCase(args[0], time.Duration(*linger*float64(time.Second)))
		if *once {
			return
		}
	}
}
