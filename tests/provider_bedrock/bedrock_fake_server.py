"""A stand-in of Amazon Bedrock's InvokeModel endpoints on 127.0.0.1, for Claude models.

The official SDK's `AsyncAnthropicBedrock` talks to it through `base_url`, as it talks to
`bedrock-runtime.REGION.amazonaws.com`: `POST /model/{modelId}/invoke` answers the Messages JSON,
`POST /model/{modelId}/invoke-with-response-stream` answers `application/vnd.amazon.eventstream`
frames (prelude, headers, payload, CRC32s), each `chunk` event carrying one Messages stream
event as base64 `bytes`, as Bedrock sends them. What Bedrock checks, it checks:

- the request is authenticated: a bearer token it knows, or a SigV4 signature (service
  `bedrock`, the stand-in's region) that verifies against credentials it knows; otherwise 403
  `UnrecognizedClientException` or `InvalidSignatureException`, Bedrock's texts;
- the body is Anthropic's with `anthropic_version: bedrock-2023-05-31`, and neither `model` nor
  `stream` (they are in the path): otherwise 400 `ValidationException`;
- the history follows Anthropic's rules (the Anthropic stand-in's checks, thinking signatures
  included), a broken one answered with a 400 `ValidationException` carrying the API's text.

Errors are Bedrock's: a JSON `{"message": ...}` body with the `x-amzn-ErrorType` header, or, in
a stream, an `exception` frame (`:exception-type`) after the events sent so far.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import threading
import zlib
from collections.abc import Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from provider_anthropic.anthropic_fake_server import (
    JSON,
    FakeAnthropic,
    Reply,
    stream_events,
)
from steadyloop.models.bedrock import BedrockModel

VERSION = "bedrock-2023-05-31"
REGION = "us-east-1"
MODEL_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0"
TOKEN = "bedrock-api-key-fake"
ACCESS_KEY = "AKIAFAKEFAKEFAKE"
SECRET_KEY = "fake/secret/key+fake"
BAD_TOKEN_TEXT = "The security token included in the request is invalid."
BAD_SIGNATURE_TEXT = (
    "The request signature we calculated does not match the signature you provided. Check your "
    "AWS Secret Access Key and signing method. Consult the service documentation for details."
)
PATH = re.compile(r"^/model/(?P<model>[^/]+)/(?P<action>invoke|invoke-with-response-stream)$")


def bedrock_error(
    status: int, kind: str, text: str, headers: Mapping[str, str] | None = None
) -> Reply:
    """An error as Bedrock sends it: `{"message": ...}` and the `x-amzn-ErrorType` header."""
    kinds = {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    return Reply(status=status, body={"message": text}, headers={**kinds, **(headers or {})})


def stream_exception(kind: str, text: str) -> JSON:
    """A stream item that the stand-in sends as an `exception` frame."""
    return {"type": "exception", "kind": kind, "message": text}


def frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total and headers length) and its CRC32, string
    headers, the payload, the CRC32 of all before it."""
    encoded = b"".join(
        bytes([len(name)])
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value))
        + value.encode()
        for name, value in headers.items()
    )
    prelude = struct.pack(">II", 16 + len(encoded) + len(payload), len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def chunk_frame(event: JSON) -> bytes:
    """A `chunk` event frame holding one Messages stream event, as Bedrock wraps it."""
    data = base64.b64encode(json.dumps(event).encode()).decode()
    payload = json.dumps({"bytes": data, "p": "abcdefghij"}).encode()
    headers = {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return frame(headers, payload)


def exception_frame(kind: str, text: str) -> bytes:
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return frame(headers, json.dumps({"message": text}).encode())


class FakeBedrock(FakeAnthropic):
    """The stand-in: `url` for base_url, `requests` the bodies received, `models` the model id
    of each (from its path), `auth` how each was authenticated ("bearer" or "sigv4"),
    `rejections` the 400s it gave for broken histories."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        tokens: Sequence[str] = (TOKEN,),
        keys: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(replies)
        self._server.RequestHandlerClass = _handler_for(self)
        self.tokens = set(tokens)
        self.keys = dict(keys if keys is not None else {ACCESS_KEY: SECRET_KEY})
        self.models: list[str] = []
        self.auth: list[str] = []
        self.paths: list[str] = []
        self._guard = threading.Lock()

    def __enter__(self) -> FakeBedrock:
        super().__enter__()
        return self

    def authenticate(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> Reply | str:
        """ "bearer" or "sigv4" when the request may go on, else the 403 Bedrock answers."""
        authorization = headers.get("authorization", "")
        if authorization.startswith("Bearer "):
            if authorization.removeprefix("Bearer ") in self.tokens:
                return "bearer"
            return bedrock_error(403, "UnrecognizedClientException", BAD_TOKEN_TEXT)
        if authorization.startswith("AWS4-HMAC-SHA256 "):
            return (
                "sigv4"
                if self._signed(method, path, headers, body, authorization)
                else (bedrock_error(403, "InvalidSignatureException", BAD_SIGNATURE_TEXT))
            )
        return bedrock_error(403, "UnrecognizedClientException", BAD_TOKEN_TEXT)

    def _signed(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes, authorization: str
    ) -> bool:
        """Whether the SigV4 signature verifies: computed again with botocore from the signed
        headers as received, the date the request carries and the secret key of its key id."""
        from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
        from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
        from botocore.credentials import Credentials  # type: ignore[import-untyped]

        fields = dict(
            part.strip().split("=", 1)
            for part in authorization.removeprefix("AWS4-HMAC-SHA256 ").split(",")
        )
        key_id, date, region, service, _ = fields["Credential"].split("/")
        if key_id not in self.keys or (region, service) != (REGION, "bedrock"):
            return False
        signed = fields["SignedHeaders"].split(";")
        url = f"http://{headers['host']}{path}"
        request = AWSRequest(
            method=method,
            url=url,
            headers={n: headers[n] for n in signed if n != "host"},
            data=body,
        )
        request.headers["host"] = headers["host"]
        request.context["timestamp"] = headers["x-amz-date"]
        token = headers.get("x-amz-security-token")
        signer = SigV4Auth(Credentials(key_id, self.keys[key_id], token), "bedrock", REGION)
        canonical = signer.canonical_request(request)
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        return bool(expected == fields["Signature"] and headers["x-amz-date"].startswith(date))


def _check_body(body: Mapping[str, Any]) -> str | None:
    """Bedrock's own checks of an Anthropic body, before the history rules."""
    if body.get("anthropic_version") != VERSION:
        return f"anthropic_version: {VERSION} is required, got {body.get('anthropic_version')!r}"
    for field in ("model", "stream"):
        if field in body:
            return f"extraneous key [{field}] is not permitted"
    return None


def _handler_for(fake: FakeBedrock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the stand-in's lists instead."""

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            matched = PATH.match(self.path.split("?")[0])
            if matched is None:
                self._json(
                    404, {"message": "Not Found"}, {"x-amzn-ErrorType": "UnknownOperationException"}
                )
                return
            auth = fake.authenticate("POST", self.path, headers, raw)
            if isinstance(auth, Reply):
                self._reply_error(auth)
                return
            body = json.loads(raw)
            with fake._guard:
                fake.auth.append(auth)
                fake.models.append(unquote(matched["model"]))
                fake.paths.append(self.path)
            problem = _check_body(body)
            if problem is not None:
                fake.rejections.append(problem)
                self._reply_error(bedrock_error(400, "ValidationException", problem))
                return
            reply = fake.answer(body)
            if reply.status != 200 or reply.body is not None:
                self._reply_error(_as_bedrock(reply))
            elif matched["action"] == "invoke-with-response-stream":
                assert reply.message is not None or reply.events is not None
                self._stream(reply.events or stream_events(reply.message or {}), reply.broken)
            else:
                self._json(200, reply.message or {}, {})

        def _reply_error(self, reply: Reply) -> None:
            self._json(reply.status, reply.body or {}, reply.headers)

        def _json(self, status: int, data: JSON, headers: Mapping[str, str]) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.send_header("x-amzn-RequestId", "fake-request-id")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, events: Sequence[JSON], broken: bool) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/vnd.amazon.eventstream")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("x-amzn-RequestId", "fake-request-id")
            self.end_headers()
            for event in events:
                if event["type"] == "exception":
                    self._chunk(exception_frame(event["kind"], event["message"]))
                    break
                if event["type"] == "ping":
                    continue  # Bedrock sends no pings
                if event["type"] == "message_stop":
                    metrics = {"inputTokenCount": 10, "outputTokenCount": 7}
                    event = {**event, "amazon-bedrock-invocationMetrics": metrics}
                self._chunk(chunk_frame(event))
            if not broken:
                self._chunk(b"")
            self.close_connection = True

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    return Handler


def _as_bedrock(reply: Reply) -> Reply:
    """A scripted or rule-breaking error in Bedrock's form (Anthropic's are converted: a 400
    is a `ValidationException`, a 429 a `ThrottlingException`...)."""
    if "x-amzn-ErrorType" in reply.headers:
        return reply
    error = (reply.body or {}).get("error") or {}
    kind = {
        400: "ValidationException",
        429: "ThrottlingException",
        503: "ServiceUnavailableException",
    }
    return bedrock_error(
        reply.status,
        kind.get(reply.status, "InternalServerException"),
        str(error.get("message", "")),
    )


def model_for(fake: FakeBedrock, model: str = MODEL_ID, **options: Any) -> BedrockModel:
    """A `BedrockModel` whose SDK client talks to `fake` with its bearer token."""
    return BedrockModel(model, region=REGION, base_url=fake.url, api_key=TOKEN, **options)
