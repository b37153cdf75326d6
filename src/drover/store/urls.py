"""Store URLs: which backend a URL names, and how it is shown (never with its password)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

POSTGRES_SCHEMES = ("postgresql", "postgres")


def backend_of(url: str) -> str:
    """"sqlite" or "postgresql"; a ValueError that lists what is supported otherwise."""
    scheme = url.partition("://")[0].lower()
    if scheme == "sqlite":
        return "sqlite"
    if scheme in POSTGRES_SCHEMES:
        return "postgresql"
    raise ValueError(f"unknown store URL {shown(url)!r}: supported are sqlite:///PATH and "
                     "postgresql://USER@HOST:PORT/DATABASE")


def sqlite_path(url: str) -> str:
    """sqlite:///abs/path and sqlite:////abs/path are both /abs/path; sqlite://rel is relative."""
    rest = url.partition("://")[2]
    return "/" + rest.lstrip("/") if rest.startswith("/") else rest


def shown(url: str) -> str:
    """The URL as logs and messages show it: without a password, in the userinfo or the query."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = urlencode([(key, value) for key, value in parse_qsl(parts.query) if key.lower() != "password"], safe="/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
