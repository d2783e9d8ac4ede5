#!/bin/bash
echo first > /app/notes.txt
