"""What a web host's cron runs every minute: it checks the queue of
uploads and rebuilds the sitemap of the site (a second or so of CPU and a
few reads), as a framework's scheduler does."""
import hashlib
import os
import time
from pathlib import Path


def main() -> None:
    site = Path("/srv/www")
    entries = []
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.name != "sitemap.xml":
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
            entries.append(f"<url><loc>/{path.relative_to(site)}</loc><etag>{digest}</etag></url>")
    # the queue check: a little arithmetic over the last hour's uploads
    total = sum(i * i for i in range(400_000))
    (site / "sitemap.xml").write_text("<urlset>" + "".join(entries) + f"</urlset><!-- {total % 97} -->\n")
    queue = Path("/srv/data/uploads")
    if queue.is_dir():
        for old in queue.iterdir():
            if old.stat().st_mtime < time.time() - 3600:
                os.unlink(old)


if __name__ == "__main__":
    main()
