#!/bin/sh
# Reward 1 when /app/hello.txt holds exactly "Hello, world!" and a newline, else 0.
mkdir -p /logs/verifier
if [ -f /app/hello.txt ] && [ "$(cat /app/hello.txt)" = "Hello, world!" ] \
   && [ "$(wc -l < /app/hello.txt)" -eq 1 ]; then
    echo 1 > /logs/verifier/reward.txt
    echo "hello.txt is correct"
else
    echo 0 > /logs/verifier/reward.txt
    echo "hello.txt is missing or wrong"
fi
exit 0
