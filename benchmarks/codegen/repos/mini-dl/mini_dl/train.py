"""One optimisation step."""

import torch


def train_step(model, batch, optimizer, loss_fn, max_grad_norm=None) -> float:
    """Run a single optimisation step on one batch.

    Args:
        model: torch.nn.Module; it is put in training mode.
        batch: (inputs, targets) pair.
        optimizer: torch optimizer over the model's parameters.
        loss_fn: callable(outputs, targets) -> 0-dim loss tensor.
        max_grad_norm: None, or the maximum global L2 norm of the gradients; when given, the
            gradients are clipped with torch.nn.utils.clip_grad_norm_ after backward and
            before the optimizer step.

    Clears the gradients before computing the loss, back-propagates, optionally clips, and
    steps the optimizer.

    Returns:
        the loss value (Python float) computed before the step.

    Raises:
        FloatingPointError: if the loss is NaN or infinite; in that case neither backward nor
            the optimizer step is run, so the parameters are left unchanged.
    """
    model.train()
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    if not torch.isfinite(loss):
        raise FloatingPointError(f"non-finite loss {loss.item()}")
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    return loss.item()
