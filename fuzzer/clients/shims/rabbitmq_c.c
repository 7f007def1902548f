/* The rabbitmq-c client shim: the shim contract in fuzzer/clients/shims.py.
 *
 * Built by `amqpfuzz client build rabbitmq-c` (cc rabbitmq_c.c -lrabbitmq). Library status
 * codes are clean outcomes (`error`, or `closed` by the socket); a signal is a crash.
 * Header values: strings as JSON strings when they are UTF-8 (else "hex:..."), byte arrays
 * "hex:...", decimals as a decimal string, timestamps integer seconds. */

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define QUEUE "amqpfuzz-shim"
#define NAME "rabbitmq-c"
#define CHANNEL 1

static const char *STATUS_NAMES[][2] = {
    {"-1", "AMQP_STATUS_NO_MEMORY"}, {"-2", "AMQP_STATUS_BAD_AMQP_DATA"},
    {"-3", "AMQP_STATUS_UNKNOWN_CLASS"}, {"-4", "AMQP_STATUS_UNKNOWN_METHOD"},
    {"-5", "AMQP_STATUS_HOSTNAME_RESOLUTION_FAILED"},
    {"-6", "AMQP_STATUS_INCOMPATIBLE_AMQP_VERSION"}, {"-7", "AMQP_STATUS_CONNECTION_CLOSED"},
    {"-8", "AMQP_STATUS_BAD_URL"}, {"-9", "AMQP_STATUS_SOCKET_ERROR"},
    {"-10", "AMQP_STATUS_INVALID_PARAMETER"}, {"-11", "AMQP_STATUS_TABLE_TOO_BIG"},
    {"-12", "AMQP_STATUS_WRONG_METHOD"}, {"-13", "AMQP_STATUS_TIMEOUT"},
    {"-14", "AMQP_STATUS_TIMER_FAILURE"}, {"-15", "AMQP_STATUS_HEARTBEAT_TIMEOUT"},
    {"-16", "AMQP_STATUS_UNEXPECTED_STATE"}, {"-17", "AMQP_STATUS_SOCKET_CLOSED"},
    {"-18", "AMQP_STATUS_SOCKET_INUSE"}, {"-19", "AMQP_STATUS_BROKER_UNSUPPORTED_SASL_METHOD"},
    {"-20", "AMQP_STATUS_UNSUPPORTED"}, {"-256", "AMQP_STATUS_TCP_ERROR"},
    {"-257", "AMQP_STATUS_TCP_SOCKETLIB_INIT_ERROR"},
};

/* How a case ended early: a status of the library, or the server's channel.close. */
typedef struct {
  int status;                  /* AMQP_STATUS_*; 0 when the server closed something */
  int by_server;               /* the server sent connection.close */
  int channel_closed;          /* the server sent channel.close */
  int code;                    /* its reply-code */
  amqp_bytes_t text;           /* its reply-text (points into the library's memory) */
} outcome_t;

static int g_case;

static const char *status_name(int status) {
  char key[16];
  snprintf(key, sizeof key, "%d", status);
  for (size_t i = 0; i < sizeof STATUS_NAMES / sizeof STATUS_NAMES[0]; i++)
    if (strcmp(STATUS_NAMES[i][0], key) == 0) return STATUS_NAMES[i][1];
  return "AMQP_STATUS_UNKNOWN";
}

/* The length of the valid UTF-8 sequence at s (0 if there is none). */
static size_t utf8_length(const unsigned char *s, size_t left) {
  size_t n = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 0;
  if (n == 0 || n > left || (n == 2 && s[0] < 0xc2)) return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  return n;
}

static int is_utf8(amqp_bytes_t b) {
  const unsigned char *s = b.bytes;
  for (size_t i = 0, n; i < b.len; i += n)
    if ((n = utf8_length(s + i, b.len - i)) == 0) return 0;
  return 1;
}

static void hex(amqp_bytes_t b) {
  for (size_t i = 0; i < b.len; i++) printf("%02x", ((const unsigned char *)b.bytes)[i]);
}

/* A JSON string of bytes (invalid UTF-8 becomes U+FFFD). */
static void string(amqp_bytes_t b) {
  const unsigned char *s = b.bytes;
  putchar('"');
  for (size_t i = 0, n; i < b.len; i += n) {
    n = utf8_length(s + i, b.len - i);
    if (n == 0) {
      fputs("\\ufffd", stdout);
      n = 1;
    } else if (s[i] == '"' || s[i] == '\\') {
      printf("\\%c", s[i]);
    } else if (s[i] < 0x20) {
      printf("\\u%04x", s[i]);
    } else {
      fwrite(s + i, 1, n, stdout);
    }
  }
  putchar('"');
}

static void cstring(const char *s) { string(amqp_cstring_bytes((char *)s)); }

static void value(const amqp_field_value_t *v);

static void table(const amqp_table_t *t) {
  putchar('{');
  for (int i = 0; i < t->num_entries; i++) {
    if (i) putchar(',');
    string(t->entries[i].key);
    putchar(':');
    value(&t->entries[i].value);
  }
  putchar('}');
}

static void value(const amqp_field_value_t *v) {
  switch (v->kind) {
    case AMQP_FIELD_KIND_BOOLEAN: fputs(v->value.boolean ? "true" : "false", stdout); break;
    case AMQP_FIELD_KIND_I8: printf("%d", v->value.i8); break;
    case AMQP_FIELD_KIND_U8: printf("%u", v->value.u8); break;
    case AMQP_FIELD_KIND_I16: printf("%d", v->value.i16); break;
    case AMQP_FIELD_KIND_U16: printf("%u", v->value.u16); break;
    case AMQP_FIELD_KIND_I32: printf("%" PRId32, v->value.i32); break;
    case AMQP_FIELD_KIND_U32: printf("%" PRIu32, v->value.u32); break;
    case AMQP_FIELD_KIND_I64: printf("%" PRId64, v->value.i64); break;
    case AMQP_FIELD_KIND_U64: printf("%" PRIu64, v->value.u64); break;
    case AMQP_FIELD_KIND_TIMESTAMP: printf("%" PRIu64, v->value.u64); break;
    case AMQP_FIELD_KIND_F32: printf("\"%.9g\"", v->value.f32); break;
    case AMQP_FIELD_KIND_F64: printf("\"%.17g\"", v->value.f64); break;
    case AMQP_FIELD_KIND_DECIMAL:
      printf("\"%" PRIu32 "E-%u\"", v->value.decimal.value, v->value.decimal.decimals);
      break;
    case AMQP_FIELD_KIND_UTF8:
      if (is_utf8(v->value.bytes)) {
        string(v->value.bytes);
        break;
      } /* fall through */
    case AMQP_FIELD_KIND_BYTES: fputs("\"hex:", stdout); hex(v->value.bytes); putchar('"'); break;
    case AMQP_FIELD_KIND_ARRAY:
      putchar('[');
      for (int i = 0; i < v->value.array.num_entries; i++) {
        if (i) putchar(',');
        value(&v->value.array.entries[i]);
      }
      putchar(']');
      break;
    case AMQP_FIELD_KIND_TABLE: table(&v->value.table); break;
    default: fputs("null", stdout);
  }
}

static void end_line(void) {
  fputs("}\n", stdout);
  fflush(stdout);
}

static void event(const char *name) { printf("{\"event\":\"%s\",\"case\":%d", name, g_case); }

static void property_string(int *first, const char *name, amqp_bytes_t b) {
  printf("%s\"%s\":", *first ? "" : ",", name);
  string(b);
  *first = 0;
}

static void properties(const amqp_basic_properties_t *p) {
  int first = 1;
  amqp_flags_t f = p->_flags;
  putchar('{');
  if (f & AMQP_BASIC_CONTENT_TYPE_FLAG) property_string(&first, "content-type", p->content_type);
  if (f & AMQP_BASIC_CONTENT_ENCODING_FLAG)
    property_string(&first, "content-encoding", p->content_encoding);
  if (f & AMQP_BASIC_HEADERS_FLAG) {
    printf("%s\"headers\":", first ? "" : ",");
    table(&p->headers);
    first = 0;
  }
  if (f & AMQP_BASIC_DELIVERY_MODE_FLAG) {
    printf("%s\"delivery-mode\":%u", first ? "" : ",", p->delivery_mode);
    first = 0;
  }
  if (f & AMQP_BASIC_PRIORITY_FLAG) {
    printf("%s\"priority\":%u", first ? "" : ",", p->priority);
    first = 0;
  }
  if (f & AMQP_BASIC_CORRELATION_ID_FLAG)
    property_string(&first, "correlation-id", p->correlation_id);
  if (f & AMQP_BASIC_REPLY_TO_FLAG) property_string(&first, "reply-to", p->reply_to);
  if (f & AMQP_BASIC_EXPIRATION_FLAG) property_string(&first, "expiration", p->expiration);
  if (f & AMQP_BASIC_MESSAGE_ID_FLAG) property_string(&first, "message-id", p->message_id);
  if (f & AMQP_BASIC_TIMESTAMP_FLAG) {
    printf("%s\"timestamp\":%" PRIu64, first ? "" : ",", p->timestamp);
    first = 0;
  }
  if (f & AMQP_BASIC_TYPE_FLAG) property_string(&first, "type", p->type);
  if (f & AMQP_BASIC_USER_ID_FLAG) property_string(&first, "user-id", p->user_id);
  if (f & AMQP_BASIC_APP_ID_FLAG) property_string(&first, "app-id", p->app_id);
  if (f & AMQP_BASIC_CLUSTER_ID_FLAG) property_string(&first, "cluster-id", p->cluster_id);
  putchar('}');
}

/* A message event; tag < 0 and redelivered < 0 print null. */
static void message(const char *via, int64_t tag, int redelivered, amqp_bytes_t exchange,
                    amqp_bytes_t routing_key, const amqp_message_t *m) {
  event("message");
  printf(",\"via\":\"%s\",\"channel\":%d,\"delivery_tag\":", via, CHANNEL);
  if (tag < 0) fputs("null", stdout); else printf("%" PRId64, tag);
  printf(",\"redelivered\":%s,\"exchange\":", redelivered < 0 ? "null" : redelivered ? "true" : "false");
  string(exchange);
  fputs(",\"routing_key\":", stdout);
  string(routing_key);
  fputs(",\"body\":\"", stdout);
  hex(m->body);
  fputs("\",\"properties\":", stdout);
  properties(&m->properties);
  end_line();
}

/* An RPC's reply, as an outcome; 1 when it is normal. */
static int replied(amqp_rpc_reply_t r, outcome_t *out) {
  if (r.reply_type == AMQP_RESPONSE_NORMAL) return 1;
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
    out->status = r.library_error ? r.library_error : AMQP_STATUS_UNEXPECTED_STATE;
  } else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
             r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
    amqp_connection_close_t *c = r.reply.decoded;
    out->by_server = 1, out->code = c->reply_code, out->text = c->reply_text;
  } else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
             r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    amqp_channel_close_t *c = r.reply.decoded;
    out->channel_closed = 1, out->code = c->reply_code, out->text = c->reply_text;
  } else {
    out->status = AMQP_STATUS_UNEXPECTED_STATE;
  }
  return 0;
}

static int status_ok(int status, outcome_t *out) {
  if (status == AMQP_STATUS_OK) return 1;
  out->status = status;
  return 0;
}

/* Reads one frame (waiting at most until `deadline` when it is set) and handles it:
 * 1 when it was read, 0 on the deadline, -1 when the case ends (out says how). `confirm`
 * gets 1 (ack) or 0 (nack) when a confirm comes. */
static int handle_frame(amqp_connection_state_t conn, const struct timeval *deadline,
                        int *confirm, outcome_t *out) {
  amqp_frame_t frame;
  struct timeval left, now, *wait = NULL;
  if (deadline) {
    gettimeofday(&now, NULL);
    timersub(deadline, &now, &left);
    if (left.tv_sec < 0) return 0;
    wait = &left;
  }
  amqp_maybe_release_buffers(conn);
  int status = amqp_simple_wait_frame_noblock(conn, &frame, wait);
  if (status == AMQP_STATUS_TIMEOUT) return 0;
  if (!status_ok(status, out)) return -1;
  if (frame.frame_type != AMQP_FRAME_METHOD) return 1; /* heartbeat or stray content */
  amqp_method_t *m = &frame.payload.method;
  amqp_message_t msg;
  switch (m->id) {
    case AMQP_BASIC_DELIVER_METHOD: {
      amqp_basic_deliver_t *d = m->decoded;
      uint64_t tag = d->delivery_tag;
      int redelivered = d->redelivered;
      amqp_bytes_t exchange = amqp_bytes_malloc_dup(d->exchange);
      amqp_bytes_t key = amqp_bytes_malloc_dup(d->routing_key);
      amqp_rpc_reply_t r = amqp_read_message(conn, frame.channel, &msg, 0);
      if (replied(r, out)) message("deliver", (int64_t)tag, redelivered, exchange, key, &msg);
      amqp_bytes_free(exchange);
      amqp_bytes_free(key);
      if (r.reply_type != AMQP_RESPONSE_NORMAL) return -1;
      amqp_destroy_message(&msg);
      return status_ok(amqp_basic_ack(conn, frame.channel, tag, 0), out) ? 1 : -1;
    }
    case AMQP_BASIC_RETURN_METHOD: {
      amqp_basic_return_t *d = m->decoded;
      amqp_bytes_t exchange = amqp_bytes_malloc_dup(d->exchange);
      amqp_bytes_t key = amqp_bytes_malloc_dup(d->routing_key);
      amqp_rpc_reply_t r = amqp_read_message(conn, frame.channel, &msg, 0);
      if (replied(r, out)) message("return", -1, -1, exchange, key, &msg);
      amqp_bytes_free(exchange);
      amqp_bytes_free(key);
      if (r.reply_type != AMQP_RESPONSE_NORMAL) return -1;
      amqp_destroy_message(&msg);
      return 1;
    }
    case AMQP_BASIC_ACK_METHOD: *confirm = 1; return 1;
    case AMQP_BASIC_NACK_METHOD: *confirm = 0; return 1;
    case AMQP_BASIC_CANCEL_METHOD: {
      amqp_basic_cancel_t *c = m->decoded;
      event("cancelled");
      fputs(",\"tag\":", stdout);
      string(c->consumer_tag);
      end_line();
      return 1;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      amqp_connection_close_t *c = m->decoded;
      out->by_server = 1, out->code = c->reply_code, out->text = c->reply_text;
      return -1;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      amqp_channel_close_t *c = m->decoded;
      out->channel_closed = 1, out->code = c->reply_code, out->text = c->reply_text;
      return -1;
    }
    default: return 1;
  }
}

/* Steps 2 to 9; 1 when --linger passed with the connection open. */
static int session(amqp_connection_state_t conn, struct amqp_connection_info *info,
                   double linger, outcome_t *out) {
  amqp_socket_t *socket = amqp_tcp_socket_new(conn);
  if (socket == NULL) return status_ok(AMQP_STATUS_NO_MEMORY, out);
  struct timeval connect_timeout = {10, 0};
  if (!status_ok(amqp_socket_open_noblock(socket, info->host, info->port, &connect_timeout), out))
    return 0;
  if (!replied(amqp_login(conn, info->vhost, AMQP_DEFAULT_MAX_CHANNELS, AMQP_DEFAULT_FRAME_SIZE,
                          0, AMQP_SASL_METHOD_PLAIN, info->user, info->password),
               out))
    return 0;
  event("connected");
  fputs(",\"server_properties\":{", stdout);
  const amqp_table_t *server = amqp_get_server_properties(conn);
  for (int i = 0, shown = 0; i < server->num_entries; i++) {
    if (server->entries[i].value.kind != AMQP_FIELD_KIND_UTF8) continue;
    if (shown++) putchar(',');
    string(server->entries[i].key);
    putchar(':');
    string(server->entries[i].value.value.bytes);
  }
  putchar('}');
  end_line();

  amqp_channel_open(conn, CHANNEL);
  if (!replied(amqp_get_rpc_reply(conn), out)) return 0;
  event("channel");
  printf(",\"channel\":%d", CHANNEL);
  end_line();
  amqp_confirm_select(conn, CHANNEL);
  if (!replied(amqp_get_rpc_reply(conn), out)) return 0;
  amqp_bytes_t queue = amqp_cstring_bytes(QUEUE);
  amqp_queue_declare_ok_t *declared =
      amqp_queue_declare(conn, CHANNEL, queue, 0, 0, 0, 0, amqp_empty_table);
  if (!replied(amqp_get_rpc_reply(conn), out)) return 0;
  event("declared");
  fputs(",\"queue\":", stdout);
  string(declared->queue);
  printf(",\"message_count\":%" PRIu32 ",\"consumer_count\":%" PRIu32, declared->message_count,
         declared->consumer_count);
  end_line();
  amqp_basic_consume_ok_t *consuming =
      amqp_basic_consume(conn, CHANNEL, queue, amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
  if (!replied(amqp_get_rpc_reply(conn), out)) return 0;
  event("consuming");
  fputs(",\"tag\":", stdout);
  string(consuming->consumer_tag);
  end_line();

  char body[64], header_key[] = "shim";
  snprintf(body, sizeof body, "amqpfuzz-shim-%d", g_case);
  amqp_table_entry_t header = {amqp_cstring_bytes(header_key),
                               {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(NAME)}}};
  amqp_basic_properties_t props = {0};
  props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                 AMQP_BASIC_HEADERS_FLAG;
  props.content_type = amqp_cstring_bytes("text/plain");
  props.delivery_mode = 1;
  props.headers.num_entries = 1;
  props.headers.entries = &header;
  if (!status_ok(amqp_basic_publish(conn, CHANNEL, amqp_cstring_bytes(""), queue, 1, 0, &props,
                                    amqp_cstring_bytes(body)),
                 out))
    return 0;
  int confirm = -1;
  while (confirm < 0)
    if (handle_frame(conn, NULL, &confirm, out) < 0) return 0;
  event("confirm");
  printf(",\"ack\":%s", confirm ? "true" : "false");
  end_line();

  amqp_rpc_reply_t got = amqp_basic_get(conn, CHANNEL, queue, 0);
  if (!replied(got, out)) return 0;
  if (got.reply.id == AMQP_BASIC_GET_OK_METHOD) {
    amqp_basic_get_ok_t *g = got.reply.decoded;
    uint64_t tag = g->delivery_tag;
    int redelivered = g->redelivered;
    amqp_bytes_t exchange = amqp_bytes_malloc_dup(g->exchange);
    amqp_bytes_t key = amqp_bytes_malloc_dup(g->routing_key);
    amqp_message_t msg;
    int read = replied(amqp_read_message(conn, CHANNEL, &msg, 0), out);
    if (read) message("get", (int64_t)tag, redelivered, exchange, key, &msg);
    amqp_bytes_free(exchange);
    amqp_bytes_free(key);
    if (!read) return 0;
    amqp_destroy_message(&msg);
    if (!status_ok(amqp_basic_ack(conn, CHANNEL, tag, 0), out)) return 0;
  } else {
    event("get-empty");
    end_line();
  }

  struct timeval now, span, deadline;
  gettimeofday(&now, NULL);
  span.tv_sec = (time_t)linger;
  span.tv_usec = (suseconds_t)((linger - (double)span.tv_sec) * 1e6);
  timeradd(&now, &span, &deadline);
  int handled;
  while ((handled = handle_frame(conn, &deadline, &confirm, out)) > 0) {
  }
  return handled == 0;
}

static void closed(const char *by, int code, const amqp_bytes_t *text) {
  event("closed");
  printf(",\"by\":\"%s\",\"code\":", by);
  if (text == NULL) {
    fputs("null,\"text\":null", stdout);
  } else {
    printf("%d,\"text\":", code);
    string(*text);
  }
  end_line();
}

static void run_case(struct amqp_connection_info *info, double linger) {
  event("connecting");
  end_line();
  amqp_connection_state_t conn = amqp_new_connection();
  outcome_t out = {0};
  if (session(conn, info, linger, &out)) {
    if (replied(amqp_connection_close(conn, AMQP_REPLY_SUCCESS), &out))
      closed("client", 0, NULL);
  }
  if (out.by_server) {
    closed("server", out.code, &out.text);
    amqp_connection_close_ok_t ok;
    amqp_send_method(conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
  } else if (out.channel_closed) {
    event("error");
    printf(",\"class\":\"AMQP_CHANNEL_CLOSE\",\"code\":%d,\"message\":", out.code);
    string(out.text);
    end_line();
  } else if (out.status == AMQP_STATUS_CONNECTION_CLOSED ||
             out.status == AMQP_STATUS_SOCKET_ERROR || out.status == AMQP_STATUS_SOCKET_CLOSED ||
             out.status == AMQP_STATUS_TCP_ERROR) {
    event("closed");
    fputs(",\"by\":\"socket\",\"code\":null,\"text\":", stdout);
    cstring(amqp_error_string2(out.status));
    end_line();
  } else if (out.status != 0) {
    event("error");
    printf(",\"class\":\"%s\",\"code\":null,\"message\":", status_name(out.status));
    cstring(amqp_error_string2(out.status));
    end_line();
  }
  amqp_destroy_connection(conn); /* closes the socket, no closing handshake */
}

int main(int argc, char **argv) {
  const char *url = NULL;
  int once = 0;
  double linger = 10.0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--once") == 0) {
      once = 1;
    } else if (strcmp(argv[i], "--linger") == 0 && i + 1 < argc) {
      linger = strtod(argv[++i], NULL);
    } else if (url == NULL && argv[i][0] != '-') {
      url = argv[i];
    } else {
      fprintf(stderr, "usage: %s URL [--once] [--linger SECONDS]\n", argv[0]);
      return 2;
    }
  }
  if (url == NULL) {
    fprintf(stderr, "usage: %s URL [--once] [--linger SECONDS]\n", argv[0]);
    return 2;
  }
  char *parsed = strdup(url);
  struct amqp_connection_info info;
  amqp_default_connection_info(&info);
  if (amqp_parse_url(parsed, &info) != AMQP_STATUS_OK) {
    fprintf(stderr, "%s: bad URL %s\n", argv[0], url);
    return 2;
  }
  if (info.vhost[0] == '\0') info.vhost = "/";
  for (g_case = 0;; g_case++) {
    run_case(&info, linger);
    if (once) break;
  }
  free(parsed);
  return 0;
}
