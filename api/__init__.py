"""The HTTP door of FedGen Lab: FastAPI routes, request/response schemas, dependencies
(authentication, rate limits, owner checks), error answers, the OpenAPI document and docs pages.
Everything it reads or writes goes through lab/."""
