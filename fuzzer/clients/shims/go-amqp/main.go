// The go-amqp client shim (github.com/Azure/go-amqp): the AMQP 1.0 shim contract in
// fuzzer/clients/shims/__init__.py.
//
// Built in module mode (go.mod pins the library from the Go module proxy). One connection per
// case, over a TCP socket the shim dials itself and hands to amqp.NewConn, wrapped so that the
// shim knows when the socket itself failed (the library reports a socket's end and a frame it
// could not decode alike, as a *ConnError). The steps run in one goroutine (the receiver's
// messages in another); the case ends on the connection's end, on an error of the library's own,
// or after --linger.
//
// Clean outcomes: the peer's close (a *ConnError carrying its error, or none at all: then
// Conn.Err is nil), the socket's end, a link the peer detached or a session it ended (a
// *LinkError or *SessionError carrying the peer's error, or none), and every other error the
// library returns ("error": its Go type, the AMQP condition when it carries one, its text;
// then the shim closes the connection). A panic, in the shim's goroutines or the library's, is
// a crash: never recovered here.
//
// Neither link names a snd-settle-mode (mixed, the default; the contract says unsettled):
// go-amqp takes a mode it names as a requirement and fails the attach ("sender settlement mode
// ... requested, received ...") when the peer's attach names another, as the Qpid Proton
// broker's does (mixed). The message is sent unsettled all the same; rcv-settle-mode first is
// named, as the contract says.
//
// What go-amqp cannot show: the peer's open container-id (container_id is null); a header's
// absent fields (the header section reads as its defaults, shown whole; none without one);
// whether a described value was one go-amqp knows (it decodes those as its own types: shown as
// their Go text); symbols, which read as strings; a detach of the sender link once its message
// is settled, and the end of a session no call waits on (no call of the shim sees them, so no
// "detached" or "ended" is printed for them). Values: binary "hex:<hex>", uuids as strings,
// timestamps integer milliseconds, floats JSON cannot carry as text.
package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	amqp "github.com/Azure/go-amqp"
)

const address = "amqpfuzz-shim"
const name = "go-amqp"
const connectTimeout = 10 * time.Second

var emitting sync.Mutex

// emit prints one event: key, value pairs after the event's name, in their order.
func emit(n int, event string, pairs ...interface{}) {
	var b bytes.Buffer
	b.WriteString(`{"event":` + jsonOf(event) + `,"case":` + jsonOf(n))
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString("," + jsonOf(pairs[i]) + ":" + jsonOf(pairs[i+1]))
	}
	b.WriteString("}\n")
	emitting.Lock()
	os.Stdout.Write(b.Bytes())
	emitting.Unlock()
}

func jsonOf(v interface{}) string {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // a value of ours that JSON cannot carry: a bug of the shim
	}
	return string(out)
}

// jsonable is a decoded AMQP value as JSON (the file's comment says how).
func jsonable(v interface{}) interface{} {
	switch x := v.(type) {
	case nil, bool, string, int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, uint:
		return x
	case []byte:
		return "hex:" + hex.EncodeToString(x)
	case amqp.UUID:
		return x.String()
	case amqp.Symbol:
		return string(x)
	case time.Time:
		return x.UnixMilli()
	case float32:
		return finite(float64(x))
	case float64:
		return finite(x)
	case amqp.Annotations:
		return jsonable(map[interface{}]interface{}(x))
	}
	if described, ok := describedOf(v); ok {
		return described
	}
	value := reflect.ValueOf(v)
	switch value.Kind() {
	case reflect.Map: // map[any]any, map[string]any, a typed map: keys as their text
		m := map[string]interface{}{}
		for _, key := range value.MapKeys() {
			k := jsonable(key.Interface())
			text, ok := k.(string)
			if !ok {
				text = jsonOf(k)
			}
			m[text] = jsonable(value.MapIndex(key).Interface())
		}
		return m
	case reflect.Slice, reflect.Array: // a list or an array (typed slices)
		if value.Kind() == reflect.Slice && value.Type().Elem().Kind() == reflect.Uint8 {
			return "hex:" + hex.EncodeToString(value.Bytes()) // an array of ubyte
		}
		l := make([]interface{}, value.Len())
		for i := range l {
			l[i] = jsonable(value.Index(i).Interface())
		}
		return l
	case reflect.String:
		return value.String()
	case reflect.Pointer:
		if value.IsNil() {
			return nil
		}
	}
	return fmt.Sprintf("%T %+v", v, v) // a type of go-amqp's own (an outcome, say)
}

// describedOf: go-amqp's DescribedType (internal to it, so read by its fields' names).
func describedOf(v interface{}) (interface{}, bool) {
	value := reflect.ValueOf(v)
	if value.Kind() != reflect.Struct || value.Type().Name() != "DescribedType" {
		return nil, false
	}
	descriptor, inner := value.FieldByName("Descriptor"), value.FieldByName("Value")
	if !descriptor.IsValid() || !inner.IsValid() {
		return nil, false
	}
	return map[string]interface{}{
		"descriptor": jsonable(descriptor.Interface()),
		"value":      jsonable(inner.Interface()),
	}, true
}

func finite(f float64) interface{} {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}

func strings_(found map[string]interface{}) map[string]string {
	shown := map[string]string{}
	for k, v := range found {
		if s, ok := v.(string); ok {
			shown[k] = s
		}
	}
	return shown
}

func bodyOf(msg *amqp.Message) map[string]interface{} {
	switch {
	case msg.Data != nil:
		sections := []interface{}{}
		for _, d := range msg.Data {
			sections = append(sections, hex.EncodeToString(d))
		}
		return map[string]interface{}{"data": sections}
	case msg.Sequence != nil:
		sections := []interface{}{}
		for _, s := range msg.Sequence {
			sections = append(sections, jsonable(s))
		}
		return map[string]interface{}{"sequence": sections}
	}
	return map[string]interface{}{"value": jsonable(msg.Value)}
}

func propertiesOf(msg *amqp.Message) map[string]interface{} {
	shown := map[string]interface{}{}
	p := msg.Properties
	if p == nil {
		return shown
	}
	if p.MessageID != nil {
		shown["message-id"] = jsonable(p.MessageID)
	}
	if p.UserID != nil {
		shown["user-id"] = hex.EncodeToString(p.UserID)
	}
	for key, text := range map[string]*string{"to": p.To, "subject": p.Subject,
		"reply-to": p.ReplyTo, "content-type": p.ContentType,
		"content-encoding": p.ContentEncoding, "group-id": p.GroupID,
		"reply-to-group-id": p.ReplyToGroupID} {
		if text != nil {
			shown[key] = *text
		}
	}
	if p.CorrelationID != nil {
		shown["correlation-id"] = jsonable(p.CorrelationID)
	}
	if p.AbsoluteExpiryTime != nil {
		shown["absolute-expiry-time"] = p.AbsoluteExpiryTime.UnixMilli()
	}
	if p.CreationTime != nil {
		shown["creation-time"] = p.CreationTime.UnixMilli()
	}
	if p.GroupSequence != nil {
		shown["group-sequence"] = *p.GroupSequence
	}
	return shown
}

func headerOf(msg *amqp.Message) map[string]interface{} {
	h := msg.Header
	if h == nil {
		return map[string]interface{}{}
	}
	return map[string]interface{}{"durable": h.Durable, "priority": h.Priority,
		"ttl": h.TTL.Milliseconds(), "first-acquirer": h.FirstAcquirer,
		"delivery-count": h.DeliveryCount}
}

// settled: whether the peer sent the message settled (go-amqp keeps it unexported).
func settled(msg *amqp.Message) interface{} {
	field := reflect.ValueOf(msg).Elem().FieldByName("settled")
	if !field.IsValid() || field.Kind() != reflect.Bool {
		return nil
	}
	return field.Bool()
}

// socket is the TCP connection handed to the library: it keeps the first error the socket
// itself gave (a read's end, a reset), and not the shim's own closing of it.
type socket struct {
	net.Conn
	mu  sync.Mutex
	err error
}

func (s *socket) Read(p []byte) (int, error) {
	n, err := s.Conn.Read(p)
	s.note(err)
	return n, err
}

func (s *socket) Write(p []byte) (int, error) {
	n, err := s.Conn.Write(p)
	s.note(err)
	return n, err
}

func (s *socket) note(err error) {
	if err == nil || errors.Is(err, net.ErrClosed) {
		return
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *socket) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// peerSaid: the error the peer's close, end or detach carried, and whether the peer ended the
// thing at all (else the library ended it over an error of its own, kept unexported as inner).
func peerSaid(err error, remote *amqp.Error) (*amqp.Error, bool) {
	if remote != nil {
		return remote, true
	}
	inner := reflect.ValueOf(err).Elem().FieldByName("inner")
	return nil, !inner.IsValid() || inner.IsNil()
}

func condition(e *amqp.Error) (interface{}, interface{}) {
	if e == nil {
		return nil, nil
	}
	return string(e.Condition), e.Description
}

// ending is a case's final event.
type ending []interface{}

func closed(by string, e *amqp.Error) ending {
	cond, desc := condition(e)
	return ending{"closed", "by", by, "condition", cond, "description", desc}
}

// failure: an error of the library's own, or the socket's end when the socket failed.
func failure(err error, sock *socket) ending {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return ending{"error", "class", "TimeoutError", "condition", nil,
			"message", fmt.Sprintf("no open from the peer in %v", connectTimeout)}
	}
	if sock != nil && sock.failed() != nil {
		return ending{"closed", "by", "socket", "condition", nil, "description", sock.failed().Error()}
	}
	var cond interface{}
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) {
		cond = string(amqpErr.Condition)
	}
	return ending{"error", "class", fmt.Sprintf("%T", err), "condition", cond, "message", err.Error()}
}

// connEnded: how the connection ended, from the error it ended with (nil: the peer's close
// without an error, as the shim did not close it).
func connEnded(err error, sock *socket) ending {
	if err == nil {
		return closed("server", nil)
	}
	var connErr *amqp.ConnError
	if errors.As(err, &connErr) {
		if remote, peer := peerSaid(connErr, connErr.RemoteErr); peer {
			return closed("server", remote)
		}
	}
	return failure(err, sock)
}

// run is one case: its connection and what its goroutines report.
type run struct {
	n        int
	conn     *amqp.Conn
	ctx      context.Context // cancelled when the case ends
	failures chan error      // errors of the library's own, to end the case with
	ended    sync.Once
	steps    sync.WaitGroup
}

// trouble takes a step's error: the connection's end is the case's own (seen by runCase), a
// link or a session the peer ended is an event, anything else ends the case.
func (r *run) trouble(err error, link string) {
	if r.ctx.Err() != nil {
		return // the case is ending: whatever the calls return now is not news
	}
	var connErr *amqp.ConnError
	var linkErr *amqp.LinkError
	var sessionErr *amqp.SessionError
	switch {
	case errors.As(err, &connErr):
		return
	case errors.As(err, &linkErr):
		if remote, peer := peerSaid(linkErr, linkErr.RemoteErr); peer {
			cond, desc := condition(remote)
			emit(r.n, "detached", "link", link, "closed", true, "condition", cond, "description", desc)
			return
		}
	case errors.As(err, &sessionErr):
		if remote, peer := peerSaid(sessionErr, sessionErr.RemoteErr); peer {
			r.ended.Do(func() {
				cond, desc := condition(remote)
				emit(r.n, "ended", "condition", cond, "description", desc)
			})
			return
		}
	}
	select {
	case r.failures <- err:
	default: // one already ends the case
	}
}

// session: the contract's steps, then the receiver's messages in a goroutine of their own.
func (r *run) session() {
	defer r.steps.Done()
	s, err := r.conn.NewSession(r.ctx, nil)
	if err != nil {
		r.trouble(err, "")
		return
	}
	emit(r.n, "session")
	first := amqp.ReceiverSettleModeFirst
	receiverName := fmt.Sprintf("amqpfuzz-shim-receiver-%d", r.n)
	// no snd-settle-mode named (mixed): the file's comment says why
	receiver, err := s.NewReceiver(r.ctx, address, &amqp.ReceiverOptions{
		Name: receiverName, Credit: 10, SettlementMode: &first,
	})
	if err != nil {
		r.trouble(err, receiverName)
		return
	}
	emit(r.n, "receiving", "link", receiver.LinkName())
	r.steps.Add(1)
	go r.receive(receiver)
	senderName := fmt.Sprintf("amqpfuzz-shim-sender-%d", r.n)
	// no snd-settle-mode named either: its message is sent unsettled all the same
	sender, err := s.NewSender(r.ctx, address, &amqp.SenderOptions{
		Name: senderName, RequestedReceiverSettleMode: &first,
	})
	if err != nil {
		r.trouble(err, senderName)
		return
	}
	emit(r.n, "sending", "link", sender.LinkName())
	text := fmt.Sprintf("amqpfuzz-shim-%d", r.n)
	contentType := "text/plain"
	receipt, err := sender.SendWithReceipt(r.ctx, &amqp.Message{
		Value:                 text,
		Properties:            &amqp.MessageProperties{MessageID: text, ContentType: &contentType},
		ApplicationProperties: map[string]interface{}{"shim": name},
	}, nil)
	if err != nil {
		r.trouble(err, senderName)
		return
	}
	state, err := receipt.Wait(r.ctx) // the settling disposition's state
	if err != nil {
		r.trouble(err, senderName)
		return
	}
	switch outcome := state.(type) {
	case nil:
		emit(r.n, "confirm", "outcome", nil)
	case *amqp.StateAccepted:
		emit(r.n, "confirm", "outcome", "accepted")
	case *amqp.StateRejected:
		cond, desc := condition(outcome.Error)
		emit(r.n, "confirm", "outcome", "rejected", "condition", cond, "description", desc)
	case *amqp.StateReleased:
		emit(r.n, "confirm", "outcome", "released")
	case *amqp.StateModified:
		emit(r.n, "confirm", "outcome", "modified")
	default: // not an outcome (received, say): the library's type
		emit(r.n, "confirm", "outcome", strings.ToLower(strings.TrimPrefix(fmt.Sprintf("%T", state), "*encoding.State")))
	}
}

func (r *run) receive(receiver *amqp.Receiver) {
	defer r.steps.Done()
	for {
		msg, err := receiver.Receive(r.ctx, nil)
		if err != nil {
			r.trouble(err, receiver.LinkName())
			return
		}
		emit(r.n, "message", "body", bodyOf(msg), "properties", propertiesOf(msg),
			"application_properties", jsonable(msg.ApplicationProperties),
			"annotations", jsonable(msg.Annotations), "header", headerOf(msg),
			"settled", settled(msg))
		if err := receiver.AcceptMessage(r.ctx, msg); err != nil {
			r.trouble(err, receiver.LinkName())
			return
		}
	}
}

// dial: the TCP socket (the connect timeout's first part) and the AMQP connection over it.
func dial(ctx context.Context, n int, target *url.URL) (*amqp.Conn, *socket, ending) {
	host, port := target.Hostname(), target.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "5672"
	}
	var dialer net.Dialer
	raw, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, failure(err, nil)
		}
		return nil, nil, ending{"closed", "by", "socket", "condition", nil, "description", err.Error()}
	}
	sock := &socket{Conn: raw}
	sasl := amqp.SASLTypeAnonymous()
	if target.User != nil {
		password, _ := target.User.Password()
		sasl = amqp.SASLTypePlain(target.User.Username(), password)
	}
	conn, err := amqp.NewConn(ctx, sock, &amqp.ConnOptions{
		ContainerID:  fmt.Sprintf("amqpfuzz-shim-go-amqp-%d-%d", os.Getpid(), n),
		HostName:     host,
		IdleTimeout:  -1, // none of ours
		WriteTimeout: -1, // no timeouts but the contract's
		SASLType:     sasl,
	})
	if err != nil {
		raw.Close()
		return nil, nil, failure(err, sock)
	}
	return conn, sock, nil
}

func runCase(n int, target *url.URL, linger time.Duration) {
	emit(n, "connecting")
	final := func(e ending) { emit(n, e[0].(string), e[1:]...) }
	connecting, stop := context.WithTimeout(context.Background(), connectTimeout)
	conn, sock, failed := dial(connecting, n, target)
	stop()
	if failed != nil {
		final(failed)
		return
	}
	emit(n, "connected", "container_id", nil, "properties", strings_(conn.Properties()))
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{n: n, conn: conn, ctx: ctx, failures: make(chan error, 1)}
	r.steps.Add(1)
	go r.session()
	lingered := time.NewTimer(linger)
	defer lingered.Stop()
	var end ending
	select {
	case <-conn.Done():
		cancel()
		end = connEnded(conn.Err(), sock)
	case err := <-r.failures:
		cancel()
		end = failure(err, sock)
		conn.Close()
	case <-lingered.C:
		select {
		case <-conn.Done(): // it ended as the time came
			cancel()
			end = connEnded(conn.Err(), sock)
		default:
			cancel()
			if err := conn.Close(); err != nil {
				end = connEnded(err, sock)
			} else {
				end = closed("client", nil)
			}
		}
	}
	r.steps.Wait() // their calls return once the case's context is cancelled
	conn.Close()
	final(end)
}

func main() {
	once := flag.Bool("once", false, "one case, then exit")
	linger := flag.Float64("linger", 10, "seconds to stay connected after connected")
	// the URL may come before the options: parse again after each argument
	var args []string
	flag.Parse()
	for flag.NArg() > 0 {
		args = append(args, flag.Arg(0))
		flag.CommandLine.Parse(flag.Args()[1:])
	}
	var target *url.URL
	if len(args) == 1 {
		target, _ = url.Parse(args[0])
	}
	if target == nil || target.Scheme != "amqp" {
		fmt.Fprintln(os.Stderr, "usage: go-amqp amqp://[user:pass@]host:port [--once] [--linger SECONDS]")
		os.Exit(2)
	}
	for n := 0; ; n++ {
		runCase(n, target, time.Duration(*linger*float64(time.Second)))
		if *once {
			return
		}
	}
}
