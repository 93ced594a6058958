"""Test helpers shared by the suite: file writers, local servers, a fault proxy, a spec model."""
