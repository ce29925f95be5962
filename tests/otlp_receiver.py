"""A small OTLP/HTTP trace receiver for shardgate's trace tests (tests/tests/http/traces.rs).

Listens on 127.0.0.1 (a free port), decodes each POST to /v1/traces as an
ExportTraceServiceRequest with PyPI's opentelemetry-proto, and prints one JSON line per span:
trace_id, span_id, parent_span_id (hex, "" for a root), name, kind, service, attributes (as
strings) and links ({trace_id, span_id}). The first line is `listening <port>`. Anything else
than a decodable protobuf body is answered 400 and printed as an `{"error": ...}` line.

Run it with the venv python of scripts/otlp-receiver.sh.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value_text(value):
    kind = value.WhichOneof("value")
    if kind is None:
        return ""
    return str(getattr(value, kind))


def spans_of(request):
    for resource_spans in request.resource_spans:
        service = ""
        for attribute in resource_spans.resource.attributes:
            if attribute.key == "service.name":
                service = value_text(attribute.value)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": span.kind,
                    "service": service,
                    "attributes": {a.key: value_text(a.value) for a in span.attributes},
                    "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in span.links],
                }


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        request = ExportTraceServiceRequest()
        try:
            if self.path != "/v1/traces":
                raise ValueError("unknown path " + self.path)
            if self.headers.get("content-type") != "application/x-protobuf":
                raise ValueError("content-type " + str(self.headers.get("content-type")))
            request.ParseFromString(body)
        except Exception as e:  # noqa: BLE001 - anything undecodable is the sender's error
            print(json.dumps({"error": str(e)}), flush=True)
            self.send_response(400)
            self.end_headers()
            return
        for span in spans_of(request):
            print(json.dumps(span), flush=True)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    print("listening", server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
