// The fe2o3-amqp client shim: the AMQP 1.0 shim contract in fuzzer/clients/shims/__init__.py.
//
// Built with cargo against fe2o3-amqp from crates.io (no TLS, no optional features). One process
// runs every case, one connection each, on one tokio runtime (two worker threads). The shim
// dials the TCP socket itself and hands it to the connection builder (open_with_stream)
// wrapped, so that it knows when the socket itself ended: fe2o3-amqp reports a socket that
// closed while the connection was open as an illegal state, and a frame size its codec refuses
// as an I/O error, neither telling them from the socket's end. The steps run in one future;
// the connection's end (ConnectionHandle::on_close) and --linger are awaited beside them. The
// links outlive the steps (dropping one detaches it): dropped once the connection is closed.
//
// Clean outcomes are the errors fe2o3-amqp's calls return: the peer's close (the connection's
// RemoteClosed / RemoteClosedWithError) is `closed` by server, a socket that ended or failed
// `closed` by socket; a link the peer detached (its attach answered by a closing detach with an
// error, a receive or the sender's on_detach telling RemoteDetached* / RemoteClosed*) is
// `detached`, a session the peer ended `ended`, and the case goes on until the connection ends
// or --linger passes. Every other error of the library (a frame it could not decode, a frame
// out of place, a message it could not decode, a session or link it ended itself, a SASL
// failure, ...) is `error`, its class the error's type and variant
// (fe2o3_amqp::link::RecvError::MessageDecode, say), its condition the AMQP error it carries or
// null, its message the error's text and Debug; then the shim aborts the socket (shuts it down)
// and moves on, as a peer sees an application that gives up on the connection: a close of the
// shim's own would hide what the library itself sent. A panic anywhere -- in the shim, in
// fe2o3-amqp, in any thread or tokio task -- prints its message and a backtrace and aborts the
// process: a crash.
//
// What fe2o3-amqp cannot show: the peer's open (the handle keeps neither its container-id nor
// its properties: container_id is null, properties {}); whether a delivery came settled
// (`settled` is left out); a header's absent fields (a header section reads as its defaults,
// shown whole but for an absent ttl; none without a header). A disposition that settles the
// shim's message without a state, or with the non-terminal received state, is an error to
// fe2o3-amqp's send (IllegalDeliveryState, NonTerminalDeliveryState): shown as `confirm` with
// outcome null, or "received". Values: binary "hex:<hex>", uuids as strings, timestamps
// integer milliseconds, described values {"descriptor", "value"} (a numeric descriptor as its
// number), decimals "hex:" of their octets, chars as strings, floats JSON cannot carry as
// text. Cargo.lock holds tokio-util at 0.7.19: fe2o3-amqp before 0.18 does not compile against
// 0.7.20 (an ambiguous Encoder impl), and a build at another version keeps the lock's.

mod common;

use common::{emit, float, hex};
use fe2o3_amqp::connection::{ConnectionHandle, Error as ConnError, OpenError};
use fe2o3_amqp::link::receiver::CreditMode;
use fe2o3_amqp::link::{DetachError, LinkStateError, RecvError, SendError, SessionStopReason};
use fe2o3_amqp::sasl_profile::SaslProfile;
use fe2o3_amqp::session::{BeginError, SessionHandle};
use fe2o3_amqp::types::definitions::{self, ErrorCondition, ReceiverSettleMode, SenderSettleMode};
use fe2o3_amqp::types::messaging::{
    ApplicationProperties, Body, Message, MessageId, Outcome, Properties,
};
use fe2o3_amqp::types::primitives::{Symbol, Value};
use fe2o3_amqp::{Connection, Receiver, Sender, Session};
use serde_json::{json, Map, Value as Json};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

const ADDRESS: &str = "amqpfuzz-shim";
const NAME: &str = "fe2o3-amqp";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

fn uuid_text(b: &[u8; 16]) -> String {
    let h = hex(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// An AMQP value as JSON (the file's comment says how).
fn jsonable(value: &Value) -> Json {
    match value {
        Value::Described(d) => {
            json!({"descriptor": descriptor(&format!("{:?}", d.descriptor)), "value": jsonable(&d.value)})
        }
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Ubyte(n) => json!(n),
        Value::Ushort(n) => json!(n),
        Value::Uint(n) => json!(n),
        Value::Ulong(n) => json!(n),
        Value::Byte(n) => json!(n),
        Value::Short(n) => json!(n),
        Value::Int(n) => json!(n),
        Value::Long(n) => json!(n),
        Value::Float(f) => float(f.into_inner() as f64),
        Value::Double(f) => float(f.into_inner()),
        Value::Decimal32(d) => json!(format!("hex:{}", hex(d.as_inner()))),
        Value::Decimal64(d) => json!(format!("hex:{}", hex(d.as_inner()))),
        Value::Decimal128(d) => json!(format!("hex:{}", hex(d.as_inner()))),
        Value::Char(c) => json!(c.to_string()),
        Value::Timestamp(t) => json!(t.milliseconds()),
        Value::Uuid(u) => json!(uuid_text(u.as_inner())),
        Value::Binary(b) => json!(format!("hex:{}", hex(b))),
        Value::String(s) => json!(s),
        Value::Symbol(s) => json!(s.as_str()),
        Value::List(items) => Json::Array(items.iter().map(jsonable).collect()),
        Value::Array(items) => Json::Array(items.0.iter().map(jsonable).collect()),
        Value::Map(map) => {
            let mut m = Map::new();
            for (k, v) in map.iter() {
                m.insert(key(k), jsonable(v));
            }
            Json::Object(m)
        }
    }
}

/// A descriptor, from its Debug text (fe2o3-amqp does not re-export serde_amqp's Descriptor):
/// `Code(112)` its number, `Name(Symbol("..."))` its symbol.
fn descriptor(debug: &str) -> Json {
    if let Some(code) = debug
        .strip_prefix("Code(")
        .and_then(|r| r.strip_suffix(')'))
    {
        if let Ok(n) = code.parse::<u64>() {
            return json!(n);
        }
    }
    let quoted = debug
        .strip_prefix("Name(Symbol(")
        .and_then(|r| r.strip_suffix("))"));
    match quoted.map(serde_json::from_str::<String>) {
        Some(Ok(name)) => json!(name),
        _ => json!(debug),
    }
}

/// A map key as a JSON object's key: text as itself, anything else as its JSON.
fn key(k: &Value) -> String {
    match jsonable(k) {
        Json::String(s) => s,
        other => other.to_string(),
    }
}

fn message_id(id: &MessageId) -> Json {
    match id {
        MessageId::Ulong(n) => json!(n),
        MessageId::Uuid(u) => json!(uuid_text(u.as_inner())),
        MessageId::Binary(b) => json!(format!("hex:{}", hex(b))),
        MessageId::String(s) => json!(s),
    }
}

/// The properties present, by the specification's names.
fn properties(p: &Properties) -> Json {
    let mut m = Map::new();
    let mut put = |name: &str, v: Json| {
        m.insert(name.into(), v);
    };
    if let Some(v) = &p.message_id {
        put("message-id", message_id(v));
    }
    if let Some(v) = &p.user_id {
        put("user-id", json!(hex(v)));
    }
    if let Some(v) = &p.to {
        put("to", json!(v));
    }
    if let Some(v) = &p.subject {
        put("subject", json!(v));
    }
    if let Some(v) = &p.reply_to {
        put("reply-to", json!(v));
    }
    if let Some(v) = &p.correlation_id {
        put("correlation-id", message_id(v));
    }
    if let Some(v) = &p.content_type {
        put("content-type", json!(v.as_str()));
    }
    if let Some(v) = &p.content_encoding {
        put("content-encoding", json!(v.as_str()));
    }
    if let Some(v) = &p.absolute_expiry_time {
        put("absolute-expiry-time", json!(v.milliseconds()));
    }
    if let Some(v) = &p.creation_time {
        put("creation-time", json!(v.milliseconds()));
    }
    if let Some(v) = &p.group_id {
        put("group-id", json!(v));
    }
    if let Some(v) = &p.group_sequence {
        put("group-sequence", json!(v));
    }
    if let Some(v) = &p.reply_to_group_id {
        put("reply-to-group-id", json!(v));
    }
    Json::Object(m)
}

fn body(b: &Body<Value>) -> Json {
    match b {
        Body::Value(v) => json!({"value": jsonable(&v.0)}),
        Body::Data(batch) => json!({"data": batch.iter().map(|d| hex(&d.0)).collect::<Vec<_>>()}),
        Body::Sequence(batch) => json!({"sequence": batch
            .iter()
            .map(|s| Json::Array(s.0.iter().map(jsonable).collect()))
            .collect::<Vec<_>>()}),
        Body::Empty => json!({}),
    }
}

fn message(case: u64, msg: &Message<Body<Value>>) {
    let mut application = Map::new();
    if let Some(ap) = &msg.application_properties {
        for (k, v) in ap.0.iter() {
            application.insert(k.clone(), jsonable(&Value::from(v.clone())));
        }
    }
    let mut annotations = Map::new();
    if let Some(ma) = &msg.message_annotations {
        for (k, v) in ma.0.iter() {
            let name = match k {
                fe2o3_amqp::types::messaging::annotations::OwnedKey::Symbol(s) => {
                    s.as_str().to_string()
                }
                fe2o3_amqp::types::messaging::annotations::OwnedKey::Ulong(n) => n.to_string(),
            };
            annotations.insert(name, jsonable(v));
        }
    }
    let mut header = Map::new();
    if let Some(h) = &msg.header {
        header.insert("durable".into(), json!(h.durable));
        header.insert("priority".into(), json!(h.priority.0));
        if let Some(ttl) = h.ttl {
            header.insert("ttl".into(), json!(ttl));
        }
        header.insert("first-acquirer".into(), json!(h.first_acquirer));
        header.insert("delivery-count".into(), json!(h.delivery_count));
    }
    let props = msg
        .properties
        .as_ref()
        .map(properties)
        .unwrap_or_else(|| json!({}));
    emit(
        "message",
        case,
        json!({"body": body(&msg.body), "properties": props,
               "application_properties": application, "annotations": annotations,
               "header": header}),
    );
}

fn condition(c: &ErrorCondition) -> String {
    let symbol: Symbol = match c {
        ErrorCondition::AmqpError(e) => e.into(),
        ErrorCondition::ConnectionError(e) => e.into(),
        ErrorCondition::SessionError(e) => e.into(),
        ErrorCondition::LinkError(e) => e.into(),
        ErrorCondition::Custom(s) => s.clone(),
    };
    symbol.into_inner()
}

/// An AMQP error's condition and description as the contract's two fields.
fn described(error: Option<&definitions::Error>) -> Json {
    match error {
        Some(e) => json!({"condition": condition(&e.condition), "description": e.description}),
        None => json!({"condition": null, "description": null}),
    }
}

/// The type's path and the error's variant, as a class: "fe2o3_amqp::link::RecvError::MessageDecode".
fn class_of(path: &str, debug: &str) -> String {
    let variant = debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    format!("fe2o3_amqp::{path}::{variant}")
}

/// An error of the library's own: the case's final `error`.
struct Own {
    class: String,
    condition: Option<String>,
    message: String,
}

impl Own {
    fn of<E: std::fmt::Debug + std::fmt::Display>(
        path: &str,
        e: &E,
        carried: Option<&definitions::Error>,
    ) -> Self {
        Own {
            class: class_of(path, &format!("{e:?}")),
            condition: carried.map(|c| condition(&c.condition)),
            message: {
                // the Display text, and the Debug text where it says more (a variant's fields)
                let (text, debug) = (e.to_string(), format!("{e:?}"));
                if debug.contains('(') || debug.contains('{') {
                    format!("{text} [{debug}]")
                } else {
                    text
                }
            },
        }
    }
}

/// What a call's error says happened.
enum Seen {
    /// the peer detached a link (closing it or not), with its error
    Detached(bool, Option<definitions::Error>),
    /// the peer ended the session, with its error
    Ended(Option<definitions::Error>),
    /// the connection stopped: its own outcome says how
    Stopped,
    Own(Own),
}

fn from_session_stop(reason: &SessionStopReason, own: impl FnOnce() -> Own) -> Seen {
    match reason {
        SessionStopReason::RemoteEnded => Seen::Ended(None),
        SessionStopReason::RemoteEndedWithError(e) => Seen::Ended(Some(e.clone())),
        SessionStopReason::ConnectionStopped(_) => Seen::Stopped,
        _ => Seen::Own(own()), // the session ended by fe2o3-amqp itself
    }
}

fn from_link_state(e: &LinkStateError, path: &str, outer: &dyn Fn() -> Own) -> Seen {
    match e {
        LinkStateError::RemoteDetached => Seen::Detached(false, None),
        LinkStateError::RemoteDetachedWithError(err) => Seen::Detached(false, Some(err.clone())),
        LinkStateError::RemoteClosed => Seen::Detached(true, None),
        LinkStateError::RemoteClosedWithError(err) => Seen::Detached(true, Some(err.clone())),
        LinkStateError::SessionStopped(reason) => from_session_stop(reason, || {
            let carried = match reason {
                SessionStopReason::EndedWithError(err) => Some(err),
                _ => None,
            };
            Own::of(path, e, carried)
        }),
        _ => Seen::Own(outer()),
    }
}

#[allow(deprecated)]
fn from_detach(e: &DetachError) -> Seen {
    match e {
        DetachError::RemoteDetachedWithError(err) => Seen::Detached(false, Some(err.clone())),
        DetachError::RemoteClosedWithError(err) => Seen::Detached(true, Some(err.clone())),
        DetachError::ClosedByRemote => Seen::Detached(true, None),
        DetachError::DetachedByRemote => Seen::Detached(false, None),
        DetachError::SessionStopped(reason) => {
            from_session_stop(reason, || Own::of("link::DetachError", e, None))
        }
        _ => Seen::Own(Own::of("link::DetachError", e, None)),
    }
}

fn from_recv(e: &RecvError) -> Seen {
    match e {
        RecvError::LinkStateError(inner) => from_link_state(inner, "link::LinkStateError", &|| {
            Own::of("link::RecvError", e, None)
        }),
        _ => Seen::Own(Own::of("link::RecvError", e, None)),
    }
}

fn from_begin(e: &BeginError) -> Seen {
    match e {
        BeginError::ConnectionStopped(_) => Seen::Stopped,
        BeginError::RemoteEnded => Seen::Ended(None),
        BeginError::RemoteEndedWithError(err) => Seen::Ended(Some(err.clone())),
        _ => Seen::Own(Own::of("session::BeginError", e, None)),
    }
}

fn from_session_end(e: &fe2o3_amqp::session::Error) -> Seen {
    use fe2o3_amqp::session::Error as E;
    match e {
        E::ConnectionStopped(_) => Seen::Stopped,
        E::RemoteEnded => Seen::Ended(None),
        E::RemoteEndedWithError(err) => Seen::Ended(Some(err.clone())),
        _ => Seen::Own(Own::of("session::Error", e, None)),
    }
}

/// The TCP socket, watched: the first read or write that finds it ended or failed is kept.
#[derive(Debug)]
struct Watched {
    socket: TcpStream,
    ended: Arc<Mutex<Option<String>>>,
}

impl Watched {
    fn saw(&self, what: String) {
        let mut ended = self.ended.lock().unwrap();
        if ended.is_none() {
            *ended = Some(what);
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let asked = buf.remaining() > 0;
        let done = Pin::new(&mut self.socket).poll_read(cx, buf);
        match &done {
            Poll::Ready(Ok(())) if asked && buf.filled().len() == before => {
                self.saw("the peer closed the socket".into())
            }
            Poll::Ready(Err(e)) => self.saw(e.to_string()),
            _ => {}
        }
        done
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let done = Pin::new(&mut self.socket).poll_write(cx, buf);
        if let Poll::Ready(Err(e)) = &done {
            self.saw(e.to_string());
        }
        done
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let done = Pin::new(&mut self.socket).poll_flush(cx);
        if let Poll::Ready(Err(e)) = &done {
            self.saw(e.to_string());
        }
        done
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.socket).poll_shutdown(cx)
    }
}

/// The URL's parts: host, port, and the user and password when it names a user.
struct Target {
    host: String,
    port: u16,
    user: Option<(String, String)>,
}

fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn target(url: &str) -> Option<Target> {
    let rest = url.strip_prefix("amqp://")?;
    let authority = rest.split('/').next().unwrap_or("");
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let user = userinfo.map(|u| {
        let (name, pass) = u.split_once(':').unwrap_or((u, ""));
        (unescape(name), unescape(pass))
    });
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => (h, p.parse().ok()?),
        _ => (
            if hostport.is_empty() {
                "127.0.0.1"
            } else {
                hostport
            },
            5672,
        ),
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Some(Target { host, port, user })
}

/// How the connection ended, by its outcome and the socket's.
fn finished(case: u64, outcome: Result<(), ConnError>, socket: &Mutex<Option<String>>) {
    let ended = socket.lock().unwrap().clone();
    match outcome {
        Err(ConnError::RemoteClosed) => emit("closed", case, {
            let mut f = described(None);
            f["by"] = json!("server");
            f
        }),
        Err(ConnError::RemoteClosedWithError(e)) => emit("closed", case, {
            let mut f = described(Some(&e));
            f["by"] = json!("server");
            f
        }),
        // an I/O error is not always the socket's: fe2o3-amqp's frame codec raises one for a
        // frame size out of bounds; the socket watched says whether the socket itself ended
        Ok(()) | Err(_) if ended.is_some() => emit(
            "closed",
            case,
            json!({"by": "socket", "condition": null, "description": ended}),
        ),
        Ok(()) => emit(
            "closed",
            case,
            json!({"by": "socket", "condition": null, "description": null}),
        ),
        Err(e) => failed(case, Own::of("connection::Error", &e, None)),
    }
}

fn failed(case: u64, own: Own) {
    emit(
        "error",
        case,
        json!({"class": own.class, "condition": own.condition, "message": own.message}),
    );
}

fn told(case: u64, seen: &Seen, link: &str, ended_told: &mut bool) {
    match seen {
        Seen::Detached(closed, e) => emit("detached", case, {
            let mut f = described(e.as_ref());
            f["link"] = json!(link);
            f["closed"] = json!(closed);
            f
        }),
        Seen::Ended(e) if !*ended_told => {
            *ended_told = true;
            emit("ended", case, described(e.as_ref()));
        }
        _ => {}
    }
}

/// Why the steps stopped before --linger: the connection stopped, or an error of the library's own.
enum Stop {
    Connection,
    Own(Own),
}

/// The links, the message and then every delivery, the sender's detach and the session's end,
/// until the connection stops or an error of the library's own.
async fn steps(
    case: u64,
    session: &mut SessionHandle<()>,
    receiver: &mut Option<Receiver>,
    sender: &mut Option<Sender>,
) -> Stop {
    let mut ended_told = false;
    let names = (
        format!("amqpfuzz-shim-receiver-{case}"),
        format!("amqpfuzz-shim-sender-{case}"),
    );
    macro_rules! settle {
        ($seen:expr, $link:expr) => {
            match $seen {
                Seen::Stopped => return Stop::Connection,
                Seen::Own(own) => return Stop::Own(own),
                seen => told(case, &seen, $link, &mut ended_told),
            }
        };
    }
    *receiver = match Receiver::builder()
        .name(names.0.clone())
        .source(ADDRESS)
        .credit_mode(CreditMode::Auto(10))
        .receiver_settle_mode(ReceiverSettleMode::First)
        .sender_settle_mode(SenderSettleMode::Unsettled)
        .attach(session)
        .await
    {
        Ok(r) => Some(r),
        Err(e) => {
            let seen = match &e {
                fe2o3_amqp::link::ReceiverAttachError::SessionStopped(reason) => {
                    from_session_stop(reason, || Own::of("link::ReceiverAttachError", &e, None))
                }
                fe2o3_amqp::link::ReceiverAttachError::RemoteClosedWithError(err) => {
                    Seen::Detached(true, Some(err.clone()))
                }
                _ => Seen::Own(Own::of("link::ReceiverAttachError", &e, None)),
            };
            settle!(seen, &names.0);
            None
        }
    };
    if receiver.is_some() {
        emit("receiving", case, json!({"link": names.0}));
        match Sender::builder()
            .name(names.1.clone())
            .target(ADDRESS)
            .sender_settle_mode(SenderSettleMode::Unsettled)
            .receiver_settle_mode(ReceiverSettleMode::First)
            .attach(session)
            .await
        {
            Ok(s) => *sender = Some(s),
            Err(e) => {
                let seen = match &e {
                    fe2o3_amqp::link::SenderAttachError::SessionStopped(reason) => {
                        from_session_stop(reason, || Own::of("link::SenderAttachError", &e, None))
                    }
                    fe2o3_amqp::link::SenderAttachError::RemoteClosedWithError(err) => {
                        Seen::Detached(true, Some(err.clone()))
                    }
                    _ => Seen::Own(Own::of("link::SenderAttachError", &e, None)),
                };
                settle!(seen, &names.1);
            }
        }
    }
    if let Some(s) = sender.as_mut() {
        emit("sending", case, json!({"link": names.1}));
        let text = format!("amqpfuzz-shim-{case}");
        let msg = Message::builder()
            .properties(
                Properties::builder()
                    .message_id(MessageId::String(text.clone()))
                    .content_type(Symbol::from("text/plain"))
                    .build(),
            )
            .application_properties(
                ApplicationProperties::builder()
                    .insert("shim", NAME)
                    .build(),
            )
            .value(text)
            .build();
        match s.send(msg).await {
            Ok(Outcome::Accepted(_)) => emit("confirm", case, json!({"outcome": "accepted"})),
            Ok(Outcome::Rejected(r)) => emit("confirm", case, {
                let mut f = described(r.error.as_ref());
                f["outcome"] = json!("rejected");
                f
            }),
            Ok(Outcome::Released(_)) => emit("confirm", case, json!({"outcome": "released"})),
            Ok(Outcome::Modified(_)) => emit("confirm", case, json!({"outcome": "modified"})),
            #[allow(unreachable_patterns)]
            Ok(other) => emit("confirm", case, json!({"outcome": format!("{other:?}")})),
            // settled with no state: fe2o3-amqp's word is an error; no outcome
            Err(SendError::IllegalDeliveryState) => emit("confirm", case, json!({"outcome": null})),
            Err(SendError::NonTerminalDeliveryState) => {
                emit("confirm", case, json!({"outcome": "received"}))
            }
            Err(e) => {
                let seen = match &e {
                    SendError::LinkStateError(inner) => {
                        from_link_state(inner, "link::LinkStateError", &|| {
                            Own::of("link::SendError", &e, None)
                        })
                    }
                    SendError::Detached(inner) => from_detach(inner),
                    _ => Seen::Own(Own::of("link::SendError", &e, None)),
                };
                let detached = matches!(seen, Seen::Detached(..));
                settle!(seen, &names.1);
                if detached {
                    *sender = None;
                }
            }
        }
    }
    // every delivery (accepted), the sender's detach, the session's end
    let mut session_up = !ended_told;
    loop {
        tokio::select! {
            got = async { receiver.as_mut().unwrap().recv::<Body<Value>>().await }, if receiver.is_some() => match got {
                Ok(delivery) => {
                    message(case, delivery.message());
                    let accepted = receiver.as_ref().unwrap().accept(&delivery).await;
                    if let Err(e) = accepted {
                        let seen = match &e {
                            fe2o3_amqp::link::IllegalLinkStateError::SessionStopped(reason) => {
                                from_session_stop(reason, || Own::of("link::IllegalLinkStateError", &e, None))
                            }
                            _ => Seen::Own(Own::of("link::IllegalLinkStateError", &e, None)),
                        };
                        settle!(seen, &names.0);
                        *receiver = None;
                    }
                }
                Err(e) => {
                    settle!(from_recv(&e), &names.0);
                    *receiver = None;
                }
            },
            detached = async { sender.as_mut().unwrap().on_detach().await }, if sender.is_some() => {
                settle!(from_detach(&detached), &names.1);
                *sender = None;
            },
            end = session.on_end(), if session_up && !ended_told => {
                session_up = false;
                match end {
                    Ok(()) => {}
                    Err(e) => settle!(from_session_end(&e), ""),
                }
            },
            else => std::future::pending::<()>().await,
        }
    }
}

enum End {
    Lingered,
    Connection,
    Own(Own),
}

async fn run_case(target: &Target, case: u64, linger: Duration) {
    emit("connecting", case, json!({}));
    let socket = Arc::new(Mutex::new(None));
    let watched = socket.clone();
    // a second handle on the socket, to abort it (shut it down) after an error of the library's
    let mut aborter: Option<std::net::TcpStream> = None;
    let opening = async {
        let tcp = match TcpStream::connect((target.host.as_str(), target.port)).await {
            Ok(tcp) => tcp,
            Err(e) => {
                *socket.lock().unwrap() = Some(e.to_string()); // never connected: the socket's end
                return Err(OpenError::Io(e));
            }
        };
        let tcp = tcp.into_std().map_err(OpenError::Io)?;
        aborter = Some(tcp.try_clone().map_err(OpenError::Io)?);
        let tcp = TcpStream::from_std(tcp).map_err(OpenError::Io)?;
        let profile = match &target.user {
            Some((username, password)) => SaslProfile::Plain {
                username: username.clone(),
                password: password.clone(),
            },
            None => SaslProfile::Anonymous,
        };
        Connection::builder()
            .container_id(format!(
                "amqpfuzz-shim-{NAME}-{}-{case}",
                std::process::id()
            ))
            .hostname(target.host.as_str())
            .sasl_profile(profile)
            .open_with_stream(Watched {
                socket: tcp,
                ended: watched,
            })
            .await
    };
    let mut conn: ConnectionHandle<()> = match tokio::time::timeout(CONNECT_TIMEOUT, opening).await
    {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => {
            let ended = socket.lock().unwrap().clone();
            match e {
                OpenError::RemoteClosed => emit(
                    "closed",
                    case,
                    json!({"by": "server", "condition": null, "description": null}),
                ),
                OpenError::RemoteClosedWithError(err) => emit("closed", case, {
                    let mut f = described(Some(&err));
                    f["by"] = json!("server");
                    f
                }),
                _ if ended.is_some() => emit(
                    "closed",
                    case,
                    json!({"by": "socket", "condition": null, "description": ended}),
                ),
                other => failed(case, Own::of("connection::OpenError", &other, None)),
            }
            return;
        }
        Err(_) => {
            let message = format!("no open from the peer in {} s", CONNECT_TIMEOUT.as_secs());
            emit(
                "error",
                case,
                json!({"class": "TimeoutError", "condition": null, "message": message}),
            );
            return;
        }
    };
    emit(
        "connected",
        case,
        json!({"container_id": null, "properties": {}}),
    ); // not kept by fe2o3-amqp
    let deadline = Instant::now() + linger;
    let mut session = None;
    // the links outlive the steps: dropped only once the connection is closed
    let mut links = (None, None);
    let end = tokio::select! {
        _ = tokio::time::sleep_until(deadline) => End::Lingered,
        begun = Session::begin(&mut conn) => match begun {
            Ok(s) => {
                session = Some(s);
                End::Connection // not the end: the steps follow
            }
            Err(e) => match from_begin(&e) {
                Seen::Stopped => End::Connection,
                Seen::Own(own) => End::Own(own),
                seen => {
                    told(case, &seen, "", &mut false);
                    End::Connection
                }
            },
        },
    };
    let end = match (end, session.as_mut()) {
        (End::Connection, Some(s)) => {
            emit("session", case, json!({}));
            let stepping = steps(case, s, &mut links.0, &mut links.1);
            tokio::pin!(stepping);
            tokio::select! {
                biased;
                outcome = conn.on_close() => {
                    finished(case, outcome, &socket);
                    return;
                }
                _ = tokio::time::sleep_until(deadline) => End::Lingered,
                stop = &mut stepping => match stop {
                    Stop::Connection => End::Connection,
                    Stop::Own(own) => End::Own(own),
                },
            }
        }
        (End::Connection, None) => {
            // no session: the connection's end, or --linger
            tokio::select! {
                biased;
                outcome = conn.on_close() => {
                    finished(case, outcome, &socket);
                    return;
                }
                _ = tokio::time::sleep_until(deadline) => End::Lingered,
            }
        }
        (end, _) => end,
    };
    match end {
        End::Lingered => match conn.close().await {
            Ok(()) => emit(
                "closed",
                case,
                json!({"by": "client", "condition": null, "description": null}),
            ),
            Err(e) => finished(case, Err(e), &socket),
        },
        End::Connection => {
            let outcome = conn.on_close().await;
            finished(case, outcome, &socket);
        }
        End::Own(own) => {
            failed(case, own);
            // the socket aborted, as a peer sees an application that gives up on the connection
            // (a close of the shim's own would hide what the library itself sent); the
            // connection's end awaited in the background, and only then its handles dropped
            if let Some(tcp) = aborter.take() {
                let _ = tcp.shutdown(std::net::Shutdown::Both);
            }
            tokio::spawn(async move {
                let _ = conn.on_close().await;
                drop((links, session));
            });
        }
    }
}

fn main() {
    let args = common::start(NAME);
    let target = target(&args.url).unwrap_or_else(|| common::usage(NAME));
    common::cases(args.once, |case| run_case(&target, case, args.linger));
}
