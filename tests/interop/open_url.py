"""MCP_CHAIN_OPEN_URL for tests: what a person's browser does with the
authorization URL mcp-chain opens, without a browser. It follows the
authorization server's redirect (a test server approves at once) to the
loopback callback mcp-chain listens on, and prints what the callback said.
Given `--deny`, it goes back with `error=access_denied` instead."""

import sys
import urllib.error
import urllib.parse
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def main() -> int:
    url = sys.argv[-1]
    opener = urllib.request.build_opener(NoRedirect)
    try:
        response = opener.open(url, timeout=30)
        location = response.headers.get("Location")
    except urllib.error.HTTPError as e:
        location = e.headers.get("Location")
    if not location:
        print(f"open_url: no redirect from {url}", file=sys.stderr)
        return 1
    if "--deny" in sys.argv[1:-1]:
        parts = urllib.parse.urlsplit(location)
        query = dict(urllib.parse.parse_qsl(parts.query))
        location = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(
            {"error": "access_denied", "state": query.get("state", "")})))
    try:
        with urllib.request.urlopen(location, timeout=30) as done:
            print(f"open_url: callback answered {done.status}", file=sys.stderr)
    except urllib.error.HTTPError as e:
        print(f"open_url: callback answered {e.code}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
