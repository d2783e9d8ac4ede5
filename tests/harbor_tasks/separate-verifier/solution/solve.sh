#!/bin/bash
echo scratch > /app/scratch.txt
awk '{s += $1} END {print s}' /app/numbers.txt > /app/report.txt
