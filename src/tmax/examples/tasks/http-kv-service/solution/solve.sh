#!/bin/bash
# Reference solution: install the server and a start script that backgrounds it.
set -euo pipefail
mkdir -p /app/data
cp /solution/kvserver.py /app/kvserver.py
cat > /app/start.sh <<'SH'
#!/bin/bash
# Start the key-value service in the background (127.0.0.1:8080, data in /app/data).
mkdir -p /app/data
nohup python3 /app/kvserver.py > /app/kvserver.log 2>&1 < /dev/null &
SH
chmod +x /app/start.sh
