"""Test doubles that ship with the package: local fake provider servers (127.0.0.1 only) that tests,
benchmarks and offline demos point a judge or a collector at instead of a real provider."""
