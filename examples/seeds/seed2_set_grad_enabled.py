import torch
x = torch.zeros(1, requires_grad=True)
with torch.no_grad():
    y = x * 2
y.requires_grad

is_train = False
with torch.set_grad_enabled(is_train):
    y = x * 2#这样形成的y不求导
y.requires_grad
torch.set_grad_enabled(True)  # this can also be used as a function
y = x * 2
y.requires_grad
torch.set_grad_enabled(False)
y = x * 2
y.requires_grad
