#!/bin/bash
# Builds the website tree /app/site with deliberately messy permissions (fixed content).
set -euo pipefail
S=/app/site
mkdir -p $S/css/.cache $S/js/node_modules/leftpad $S/images/thumbs/.cache $S/drafts $S/bin $S/config \
         $S/node_modules/.bin $S/uploads "$S/docs/release notes"
cd $S
printf '<!doctype html>\n<title>Hill Farm Bakery</title>\n<link rel="stylesheet" href="css/style.css">\n<h1>Fresh bread daily</h1>\n' > index.html
printf '<!doctype html>\n<title>About us</title>\n<p>Family bakery since 1987.</p>\n' > "about us.html"
ln -s "about us.html" latest.html
printf 'RewriteEngine On\nRewriteRule ^old/(.*)$ /$1 [R=301,L]\n' > .htaccess
printf 'body { font-family: serif; color: #332; }\nh1 { color: #a52; }\n' > css/style.css
head -c 3000 /dev/zero | tr '\0' 'c' > css/.cache/compiled.bin
printf 'document.addEventListener("DOMContentLoaded", () => console.log("ready"));\n' > js/app.js
printf 'b0VIM 9.0 swap file for app.js\n' > js/.app.js.swp
printf 'module.exports = (s, n) => s.padStart(n);\n' > js/node_modules/leftpad/index.js
printf '{"name": "leftpad", "version": "1.3.0"}\n' > js/node_modules/leftpad/package.json
printf '#!/bin/sh\necho vendored\n' > node_modules/.bin/tool
python3 - <<'PY'
import random
rng = random.Random(31)
open("images/logo.png", "wb").write(b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(4096)))
open("images/photo 01.jpg", "wb").write(b"\xff\xd8\xff\xe0" + bytes(rng.randrange(256) for _ in range(8192)))
open("images/thumbs/logo_64.png", "wb").write(b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(512)))
open("images/thumbs/.cache/logo_64.webp", "wb").write(bytes(rng.randrange(256) for _ in range(300)))
PY
printf '# Spring menu\n\nRye, spelt and a new sourdough.\n' > drafts/spring-menu.md
printf '# Spring menu\n\nRye, spelt\n' > drafts/spring-menu.md.tmp
printf 'autosave\n' > drafts/.autosave.tmp
printf '#!/bin/sh\nrsync -a --delete /app/site/ web01:/var/www/site/\n' > bin/deploy.sh
printf '#!/bin/sh\nfind /app/site -name "*.tmp" -delete\n' > bin/clean-tmp
printf 'site_name = Hill Farm Bakery\ncache_ttl = 300\n' > config/site.conf
printf 'SMTP_PASSWORD=hunter2-but-longer\nSTRIPE_KEY=sk_test_0000\n' > config/secrets.env
printf 'v2.3: new menu page\nv2.2: fixed contact form\n' > "docs/release notes/2024-03.txt"
# messy permissions
chmod 777 index.html js/app.js images/logo.png config/secrets.env
chmod 600 css/style.css "images/photo 01.jpg" bin/clean-tmp
chmod 640 "about us.html" drafts/spring-menu.md
chmod 755 config/site.conf .htaccess
chmod 644 bin/deploy.sh
chmod 700 css images/thumbs docs uploads
chmod 775 drafts bin
chmod 750 config "docs/release notes"
