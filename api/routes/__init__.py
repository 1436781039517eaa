"""One module per resource; each holds an APIRouter named `router`."""
