import math

import pytest
import torch

from mini_dl.metrics import accuracy, dice_score


def test_accuracy():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    assert math.isclose(accuracy(logits, torch.tensor([0, 1, 1])), 2 / 3, rel_tol=1e-6)


def test_dice_by_hand():
    pred = torch.tensor([[[0.9, 0.8], [0.1, 0.6]]])        # foreground: 3 pixels
    target = torch.tensor([[[1, 0], [0, 1]]])              # foreground: 2 pixels, overlap 2
    out = dice_score(pred, target)
    assert out.shape == (1,) and out.dtype == torch.float32
    assert math.isclose(out.item(), 4 / 5, rel_tol=1e-5)


def test_dice_threshold_is_strict_and_per_image():
    pred = torch.tensor([[[0.5, 0.7]], [[0.2, 0.2]]])
    target = torch.tensor([[[1, 1]], [[0, 1]]], dtype=torch.bool)
    out = dice_score(pred, target)
    assert torch.allclose(out, torch.tensor([2 / 3, 0.0]), atol=1e-5)
    assert math.isclose(dice_score(pred, target, threshold=0.4)[0].item(), 1.0, rel_tol=1e-5)


def test_dice_empty_masks_and_shape_check():
    assert dice_score(torch.zeros(2, 3, 3), torch.zeros(2, 3, 3)).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError):
        dice_score(torch.zeros(1, 2, 2), torch.zeros(1, 2, 3))
