#!/usr/bin/env python3
"""A small list-watch informer, correct by default, with one bug planted on demand.

    planted.py --bug NAME [--namespace NS] [--resource configmaps] [--idle-timeout 5]

It keeps a cache of one namespace's objects the way client-go's reflector does (LIST, WATCH
from the list's resourceVersion with bookmarks, re-watch from the last resourceVersion after a
normal end, relist after a 410, back off after errors honouring Retry-After, give up on a
stream silent for --idle-timeout seconds), and serves that cache as a Kubernetes List on
http://127.0.0.1:$PORT/ for the simulator to compare with storage. It talks HTTP itself
(urllib3, with the kubeconfig in $KUBECONFIG read by the official client's loader), so each
bug below is exactly one change to what goes on the wire: the kind of bug real client
libraries have shipped, which `listwatch simulate` must catch.

--bug none                  correct
--bug rewatch-from-now      after a stream ends, watch again from "" (now) without a LIST
--bug relist-keeps-stale    after a 410, relist but keep objects missing from the new list
--bug same-rv-after-410     after a 410, ask the same resourceVersion again, at once
--bug drops-modified        lose every third MODIFIED event
--bug never-advances        resume from the first LIST's resourceVersion, always
--bug ignores-bookmarks     ask for bookmarks, but never resume from one
--bug ignores-retry-after   after a 429, come back at once
--bug no-backoff            after an error, try again at once
--bug relists-constantly    LIST every half second besides watching
--bug no-idle-timeout       never give up on a silent stream
--bug streaming-every-time  re-watch with sendInitialEvents=true every time
--bug first-page-only       read only the first page of a paged LIST
--bug exits-on-410          exit 1 on a 410
--bug keeps-partial-list    when a page's continue token expires (410), keep the pages read
                            and watch from their resourceVersion
--bug hammers-too-large     after a 504 "Too large resource version", list again at once at the
                            same resourceVersion (kubernetes#91073)
--bug relists-at-zero       relist with resourceVersion=0 (any cache's state) whenever a stream
                            ends, instead of resuming
"""

import argparse
import json
import os
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import urllib3
from kubernetes import config as kube_config
from kubernetes.client import Configuration

BUGS = [
    "none", "rewatch-from-now", "relist-keeps-stale", "same-rv-after-410", "drops-modified",
    "never-advances", "ignores-bookmarks", "ignores-retry-after", "no-backoff",
    "relists-constantly", "no-idle-timeout", "streaming-every-time", "first-page-only",
    "exits-on-410", "keeps-partial-list", "hammers-too-large", "relists-at-zero",
]


class Gone(Exception):
    """A 410: the resourceVersion asked for is too old."""


class Throttled(Exception):
    def __init__(self, retry_after):
        super().__init__(f"429, Retry-After: {retry_after}")
        self.retry_after = retry_after


class Failed(Exception):
    """Any other error answer, or a broken connection."""


class TooLarge(Failed):
    """504: the server has not reached the resourceVersion asked for."""


class Informer:
    def __init__(self, args):
        self.bug = args.bug
        self.idle_timeout = None if self.bug == "no-idle-timeout" else args.idle_timeout
        configuration = Configuration()
        kube_config.load_kube_config(client_configuration=configuration)
        self.host = configuration.host.rstrip("/")
        self.headers = {"Authorization": configuration.api_key.get("authorization", ""), "Accept": "application/json",
                        "User-Agent": f"planted/{self.bug}"}
        self.http = urllib3.PoolManager(ca_certs=configuration.ssl_ca_cert, cert_reqs="CERT_REQUIRED"
                                        if configuration.ssl_ca_cert else "CERT_NONE", retries=False)
        prefix = "/api/v1" if args.group == "" else f"/apis/{args.group}/{args.version}"
        self.path = f"{prefix}/namespaces/{args.namespace}/{args.resource}"
        self.cache = {}
        self.lock = threading.Lock()
        self.rv = ""
        self.first_rv = ""
        self.backoff = 0.8
        self.modified_seen = 0
        self.watched = False
        self.page_size = args.page_size

    # -- HTTP ------------------------------------------------------------------------------

    def request(self, params, stream=False):
        query = "&".join(f"{k}={v}" for k, v in params.items())
        try:
            response = self.http.request("GET", f"{self.host}{self.path}?{query}", headers=self.headers,
                                         preload_content=not stream,
                                         timeout=urllib3.Timeout(connect=5, read=self.idle_timeout if stream else 30))
        except urllib3.exceptions.HTTPError as e:
            raise Failed(str(e))
        if response.status == 410:
            raise Gone()
        if response.status == 429:
            raise Throttled(float(response.headers.get("Retry-After", "1")))
        if response.status == 504:
            raise TooLarge("504")
        if response.status >= 400:
            raise Failed(f"{response.status}")
        return response

    # -- LIST ------------------------------------------------------------------------------

    def list(self, resource_version):
        limit = "2" if self.bug == "first-page-only" else str(self.page_size)
        params = {"resourceVersion": resource_version, "limit": limit}
        items = []
        rv = ""
        while True:
            try:
                page = json.loads(self.request(params).data)
            except Gone:
                if self.bug == "keeps-partial-list" and items:
                    return items, rv
                raise
            rv = rv or page["metadata"]["resourceVersion"]
            items.extend(page.get("items") or [])
            token = page["metadata"].get("continue")
            if not token or self.bug == "first-page-only":
                return items, page["metadata"]["resourceVersion"]
            params = {"limit": params["limit"], "continue": token}

    def sync(self, resource_version=""):
        items, rv = self.list(resource_version)
        fresh = {key(item): item for item in items}
        with self.lock:
            if self.bug == "relist-keeps-stale":
                self.cache.update(fresh)
            else:
                self.cache = fresh
        self.rv = rv
        if not self.first_rv:
            self.first_rv = rv

    # -- WATCH -----------------------------------------------------------------------------

    def watch_once(self):
        """One watch stream; returns normally when the server ends it."""
        params = {"watch": "1", "allowWatchBookmarks": "true"}
        if self.bug == "streaming-every-time":
            params.update(sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
                          resourceVersion=self.rv or "")
        elif self.bug == "never-advances":
            params["resourceVersion"] = self.first_rv
        else:
            params["resourceVersion"] = self.rv
        response = self.request(params, stream=True)
        buffer = b""
        try:
            for chunk in response.stream(4096, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        self.apply(json.loads(line))
        except (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ProtocolError) as e:
            raise Failed(f"stream broken: {e}")
        finally:
            response.release_conn()

    def apply(self, event):
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone()
            raise Failed(obj.get("message", "ERROR"))
        rv = obj["metadata"]["resourceVersion"]
        if kind == "BOOKMARK":
            if self.bug != "ignores-bookmarks":
                self.rv = rv
            return
        if kind == "MODIFIED":
            self.modified_seen += 1
            if self.bug == "drops-modified" and self.modified_seen % 3 == 0:
                self.rv = rv
                return
        with self.lock:
            if kind == "DELETED":
                self.cache.pop(key(obj), None)
            else:
                self.cache[key(obj)] = obj
        self.rv = rv

    # -- the loop --------------------------------------------------------------------------

    def wait(self, seconds):
        if self.bug != "no-backoff":
            time.sleep(seconds)

    def backed_off(self):
        delay = self.backoff * (1 + random.random())
        self.backoff = min(self.backoff * 2, 30)
        self.wait(delay)

    def run(self):
        if self.bug == "relists-constantly":
            threading.Thread(target=self.relist_constantly, daemon=True).start()
        need_list = True
        while True:
            try:
                if need_list:
                    self.sync(self.rv)
                    need_list = False
                if self.bug == "rewatch-from-now" and self.watched:
                    self.rv = ""
                self.watch_once()
                self.watched = True
                self.backoff = 0.8
                if self.bug == "relists-at-zero":
                    self.sync("0")
            except Gone:
                if self.bug == "exits-on-410":
                    print("410: giving up", file=sys.stderr)
                    os._exit(1)
                if self.bug == "same-rv-after-410":
                    continue
                need_list = True
                self.rv = ""
                self.backed_off()
            except Throttled as e:
                if self.bug != "ignores-retry-after":
                    self.wait(e.retry_after)
            except TooLarge as e:
                print(f"error: {e}", file=sys.stderr)
                need_list = True
                if self.bug == "hammers-too-large":
                    continue
                # client-go: the resourceVersion is not there (yet): list at "" after a backoff.
                self.rv = ""
                self.backed_off()
            except Failed as e:
                print(f"error: {e}", file=sys.stderr)
                if not str(e).startswith("stream broken"):
                    need_list = True
                self.backed_off()

    def relist_constantly(self):
        while True:
            time.sleep(0.5)
            try:
                self.list("")
            except Exception:
                pass

    def as_list(self):
        with self.lock:
            items = list(self.cache.values())
        return {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": self.rv}, "items": items}


def key(obj):
    metadata = obj["metadata"]
    return f"{metadata.get('namespace', '')}/{metadata['name']}"


def serve_cache(informer, port):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(informer.as_list()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bug", choices=BUGS, default="none")
    parser.add_argument("--namespace", default="sim-0")
    parser.add_argument("--resource", default="configmaps")
    parser.add_argument("--group", default="")
    parser.add_argument("--version", default="v1")
    parser.add_argument("--idle-timeout", type=float, default=5.0)
    parser.add_argument("--page-size", type=int, default=500)
    args = parser.parse_args()
    informer = Informer(args)
    if os.environ.get("PORT"):
        serve_cache(informer, int(os.environ["PORT"]))
    informer.run()


if __name__ == "__main__":
    main()
