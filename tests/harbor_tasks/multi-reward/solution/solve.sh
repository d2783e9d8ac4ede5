#!/bin/bash
echo '{"name": "tmax", "version": 3}' > /app/config.json
