"""Google's Gemini API (`generateContent`, `streamGenerateContent`): its request and
response bodies, as the capture proxy reads them."""

from contextsim.systems.manifest import System

SYSTEM = System(label="Gemini API", provider="openai")
