#!/bin/bash
echo second >> /app/notes.txt
