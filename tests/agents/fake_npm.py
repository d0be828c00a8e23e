"""A stand-in for npm (``SILO_NB_AGENT_NPM``) in the pinned-agent tests: ``install --prefix DIR ... PKG@VER``
lays out ``DIR/node_modules/PKG`` (package.json with a bin, the bin, a package-lock with an integrity) as
npm would, and appends one line per run to ``$FAKE_NPM_LOG``, so a test counts the installs.
``$FAKE_NPM_FAIL`` (or a package named ``missing-…``) makes it fail as npm does for a package that is not
in the registry."""

import json
import os
import sys
from pathlib import Path

args = sys.argv[1:]
prefix = Path(args[args.index("--prefix") + 1])
wanted = args[-1]
name, _, version = wanted.rpartition("@")
with open(os.environ["FAKE_NPM_LOG"], "a") as log:
    log.write(wanted + "\n")
if os.environ.get("FAKE_NPM_FAIL") or name.startswith("missing-"):
    print(
        f"npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/{name} - Not found",
        file=sys.stderr,
    )
    sys.exit(1)
package = prefix / "node_modules" / name
(package / "dist").mkdir(parents=True)
short = name.rsplit("/", 1)[-1]
(package / "package.json").write_text(
    json.dumps({"name": name, "version": version, "bin": {short: "dist/index.js"}})
)
(package / "dist" / "index.js").write_text("console.log('agent');\n")
lock = {"packages": {f"node_modules/{name}": {"version": version, "integrity": "sha512-fake"}}}
(prefix / "package-lock.json").write_text(json.dumps(lock))
